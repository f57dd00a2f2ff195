"""``TraceRequest`` and JSON-lines traces: one request per line,
``{"prompt_token_ids": [...], "response_token_ids": [...], "req_id": "optional str or int"}``."""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from arctic_ref.suffix.validate import check_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceRequest:
    """One request of a trace: its id, prompt and true response."""

    req_id: str | int
    prompt_token_ids: list[int]
    response_token_ids: list[int]


class TraceLine(TypedDict, total=False):
    """A line of a JSONL trace as it is on disk."""

    req_id: str | int
    prompt_token_ids: list[int]
    response_token_ids: list[int]


def read_trace(path: Path) -> list[TraceRequest]:
    """Parse and validate every line (docs/suffix-decoding.md §2.2 on every token) before anything is replayed."""
    requests: list[TraceRequest] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error.msg})") from None
            if not isinstance(record, dict) or "prompt_token_ids" not in record or "response_token_ids" not in record:
                raise ValueError(f"{path}:{number}: needs prompt_token_ids and response_token_ids")
            req_id = record.get("req_id", len(requests))
            if isinstance(req_id, bool) or not isinstance(req_id, (str, int)):
                raise ValueError(f"{path}:{number}: req_id {req_id!r} must be a str or an int")
            requests.append(
                TraceRequest(
                    req_id=req_id,
                    prompt_token_ids=check_tokens(f"{path}:{number}: prompt_token_ids", record["prompt_token_ids"]),
                    response_token_ids=check_tokens(
                        f"{path}:{number}: response_token_ids", record["response_token_ids"]
                    ),
                )
            )
    return requests


def write_trace(path: Path, requests: Iterable[TraceRequest]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for request in requests:
            line: TraceLine = {
                "req_id": request.req_id,
                "prompt_token_ids": request.prompt_token_ids,
                "response_token_ids": request.response_token_ids,
            }
            out.write(json.dumps(line) + "\n")
