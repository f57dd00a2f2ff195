"""The built-in ``code-edit`` trace: editing tasks over the Python standard library's own sources.

Each request asks for a small edit of a chunk of a standard-library module: the prompt is a one-line
instruction and the chunk, the response is the chunk after the edit (a rename, a deleted line or an
inserted line). Files recur across requests, so earlier responses help later ones through the global
tree. Everything is fixed by the seed and the running Python's own sources; nothing is downloaded.

Tokens come from a small deterministic tokenizer (words split into pieces of at most 4 characters,
runs of spaces, single punctuation marks), with ids given in order of first appearance, which makes
pieces of roughly BPE size.
"""

import importlib.util
import random
import re
from pathlib import Path
from typing import Final

from arctic_ref.suffix.trace_file import TraceRequest

#: Modules whose sources make the trace: pure-Python, present in every CPython 3.10+.
MODULES: Final = (
    "textwrap",
    "heapq",
    "bisect",
    "difflib",
    "fractions",
    "shlex",
    "calendar",
    "functools",
    "statistics",
    "string",
    "queue",
    "sched",
    "colorsys",
    "graphlib",
)
_PIECE: Final = re.compile(r"[A-Za-z0-9_]{1,4}| +|\n|.", re.DOTALL)
_IDENTIFIER: Final = re.compile(r"\b[a-z_][a-z0-9_]{3,}\b")


class Tokenizer:
    """Text → ids, assigning new ids in order of first appearance."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def encode(self, text: str) -> list[int]:
        vocab = self.vocab
        return [vocab.setdefault(piece, len(vocab)) for piece in _PIECE.findall(text)]


def module_source(name: str) -> str:
    """The source text of a standard-library module, read from the running Python's files."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ValueError(f"module {name!r} has no Python source in this installation")
    return Path(spec.origin).read_text(encoding="utf-8")


def _edit(lines: list[str], rng: random.Random) -> tuple[str, list[str]]:
    """Pick and apply one small edit; return the instruction and the edited lines."""
    kind = rng.choice(("rename", "delete", "insert"))
    names = sorted(set(_IDENTIFIER.findall("\n".join(lines))))
    if kind == "rename" and names:
        old = rng.choice(names)
        new = old + rng.choice(("_value", "_new", "2", "_x"))
        pattern = re.compile(rf"\b{re.escape(old)}\b")
        return f"Rename `{old}` to `{new}` in this code.", [pattern.sub(new, line) for line in lines]
    if kind == "delete" and len(lines) > 2:
        index = rng.randrange(len(lines))
        return f"Delete line {index + 1} of this code.", lines[:index] + lines[index + 1 :]
    index = rng.randrange(len(lines) + 1)
    indent = re.match(r" *", lines[index - 1] if index else "")
    added = (indent.group(0) if indent else "") + "# reviewed: keep this behaviour"
    return f"Insert a review comment after line {index} of this code.", [*lines[:index], added, *lines[index:]]


def code_edit_trace(requests: int = 60, seed: int = 0, chunk_lines: int = 40, files: int = 6) -> list[TraceRequest]:
    """The ``code-edit`` workload: ``requests`` edits of chunks drawn from ``files`` modules."""
    if requests < 0 or chunk_lines < 1 or files < 1:
        raise ValueError(f"requests({requests}) >= 0, chunk_lines({chunk_lines}) >= 1, files({files}) >= 1 required")
    rng = random.Random(seed)
    tokenizer = Tokenizer()
    chosen = rng.sample(MODULES, min(files, len(MODULES)))
    sources = {name: module_source(name).splitlines() for name in chosen}
    trace = []
    for index in range(requests):
        name = rng.choice(chosen)
        lines = sources[name]
        start = rng.randrange(max(1, len(lines) - chunk_lines))
        chunk = lines[start : start + chunk_lines]
        instruction, edited = _edit(chunk, rng)
        prompt = f"{instruction} (from {name}.py)\n" + "\n".join(chunk) + "\n"
        response = "\n".join(edited) + "\n"
        trace.append(
            TraceRequest(
                req_id=index, prompt_token_ids=tokenizer.encode(prompt), response_token_ids=tokenizer.encode(response)
            )
        )
    return trace
