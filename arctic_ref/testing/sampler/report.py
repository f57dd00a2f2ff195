"""``ConformanceReport``: what ``check_rejection_sampler`` found, one ``Verdict`` per check the kit
ran, in the table's order, readable as a mapping from check id to verdict."""

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from arctic_ref.testing.check import Outcome, Verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class ConformanceReport(Mapping[str, Verdict]):
    """Check id → ``Verdict`` (``Verdict.outcome``, ``detail``; a statistical check's statistic,
    p-value and threshold in ``figures``), with what was checked and how. A failure that a known
    upstream difference explains (``Verdict.known_difference``) does not fail the report.

    Checks the kit did not run are absent: the statistical ones with ``statistics=False``,
    ``S-DESIGN`` when every tested position got enough samples, ``S-DESIGN`` and ``S5-SPEED`` when
    the sampler stopped the statistical checks."""

    candidate: str
    torch_version: str
    device: str
    profile: str
    level: str
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    p_values: Mapping[str, float] = field(default_factory=dict)
    """The statistical checks' p-values (check id → the worst test's p), unrounded."""

    def __getitem__(self, check_id: str) -> Verdict:
        return self.verdicts[check_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self.verdicts)

    def __len__(self) -> int:
        return len(self.verdicts)

    @property
    def ok(self) -> bool:
        return not self.failed()

    def failed(self) -> list[str]:
        """The checks that failed, a known difference aside, in the table's order."""
        return [i for i, v in self.verdicts.items() if v.outcome is Outcome.FAIL and not v.known_difference]

    def to_json(self) -> str:
        checks = [
            {"id": i, "outcome": v.outcome.value, "known_difference": v.known_difference, "count": v.count}
            | {"figures": dict(v.figures), "detail": v.skipped or v.detail}
            for i, v in self.verdicts.items()
        ]
        head = {k: getattr(self, k) for k in ("candidate", "torch_version", "device", "profile", "level")}
        return json.dumps({**head, "ok": self.ok, "checks": checks}, indent=2)

    def to_markdown(self) -> str:
        lines = [
            f"**{self.candidate}** — torch {self.torch_version}, {self.device}, profile {self.profile}, level {self.level}: "
            + ("all checks pass" if self.ok else f"FAILED {', '.join(self.failed())}"),
            "",
            "| check | outcome | statistic | p-value | threshold | detail |",
            "|---|---|---|---|---|---|",
        ]
        for check_id, v in self.verdicts.items():
            outcome = f"known difference {v.known_difference}" if v.known_difference else v.outcome.value
            figures = " | ".join(v.figures.get(k, "") for k in ("statistic", "p-value", "threshold"))
            lines.append(f"| {check_id} | {outcome} | {figures} | {v.skipped or v.detail} |")
        return "\n".join(lines)
