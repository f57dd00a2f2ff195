"""The vocabulary of the rejection-sampler conformance kit: the candidate's Protocol, one
``CheckResult`` per check, the ``ConformanceReport``, and the known vLLM 0.9.2 and 0.32 differences."""

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Final, Literal, Protocol

from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise


class RejectionSampleFn(Protocol):
    """The eight positional parameters of ``rejection_sample`` (vLLM 0.9.x's module function)."""

    def __call__(
        self,
        draft_token_ids: Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: Tensor,
        draft_probs: Tensor | None,
        target_logits: Tensor,
        bonus_token_ids: Tensor,
        sampling_metadata: SamplingMetadata,
    ) -> Tensor: ...


NoiseInjector = Callable[[RejectionNoise], AbstractContextManager[None]]


class CheckStatus(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    KNOWN = "known-difference"


#: Which check a known upstream difference (docs/verification.md §2.4) explains.
#: vLLM 0.9.2 validates neither lengths nor shapes (X5's row), nor greedy flags (X4), nor NaN rows (X3).
KNOWN_DIFFERENCE_OF_CHECK = {
    "E6": "X1",
    "E11": "X4",
    "E14": "X6",
    "E15-SPEC-LEN": "X5",
    "E15-SHAPES": "X5",
    "E15-FLAGS": "X4",
    "E15-NAN": "X3",
    "E16": "X4",
}

VLLM_0_32_DIFFERENCES: Final = ("X3", "X4", "X5")
"""The differences the kit reports on vLLM 0.32's own ``RejectionSampler`` class
(``vllm_class.py``): X3, a NaN row is sampled from, not refused (E15-NAN); X4, greedy flags are
not validated (E15-FLAGS) and a greedy row's generator advances (E11: vLLM never gives a greedy
request one, its rows with drafts draw from any generator they are given); X5, ``max_spec_len``
is not checked against 32 (E15-SPEC-LEN under a profile whose limit is 32: vLLM's is 128, where it
asserts). Not X1, X2 or X6: E8 and E14 pass, and E6 needs injected noise."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    id: str
    kind: Literal["exact", "statistical"]
    status: CheckStatus
    statistic: float | None = None
    p_value: float | None = None
    threshold: float | None = None
    detail: str = ""
    counterexample: str = ""


@dataclass(slots=True, kw_only=True)
class ConformanceReport:
    candidate: str
    torch_version: str
    device: str
    profile: str
    level: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.status is not CheckStatus.FAIL for c in self.checks)

    def failed(self) -> list[str]:
        return [c.id for c in self.checks if c.status is CheckStatus.FAIL]

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "ok": self.ok}, indent=2, default=str)

    def to_markdown(self) -> str:
        lines = [
            f"**{self.candidate}** — torch {self.torch_version}, {self.device}, profile {self.profile}, level {self.level}: "
            + ("all checks pass" if self.ok else f"FAILED {', '.join(self.failed())}"),
            "",
            "| check | kind | status | statistic | p-value | threshold | detail |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in self.checks:
            stat = "" if c.statistic is None else f"{c.statistic:.4g}"
            pv = "" if c.p_value is None else f"{c.p_value:.3g}"
            th = "" if c.threshold is None else f"{c.threshold:.3g}"
            lines.append(
                f"| {c.id} | {c.kind} | {c.status} | {stat} | {pv} | {th} | {(c.detail + ' ' + c.counterexample).strip()} |"
            )
        return "\n".join(lines)
