"""``plot_replay``: acceptance and draft length over the steps of a replay (matplotlib, optional)."""

from pathlib import Path

from arctic_ref.suffix.simulate import StepRecord

try:
    # A Figure of its own (no pyplot): no backend is chosen, so importing this changes nothing for
    # a user's own matplotlib.
    from matplotlib.figure import Figure

    MATPLOTLIB_AVAILABLE = True
except ImportError:  # pragma: no cover - the optional extra
    MATPLOTLIB_AVAILABLE = False


def plot_replay(steps: list[StepRecord], path: Path, *, window: int = 50) -> None:
    """Two panels over the step index: drafted and accepted tokens (moving averages over ``window``
    steps), and the acceptance rate of the same window."""
    if not MATPLOTLIB_AVAILABLE:
        raise RuntimeError("--plot needs matplotlib: pip install 'arctic-ref[plot]'")
    if not steps:
        raise ValueError("nothing to plot: the replay made no steps")
    drafted = [s.num_draft for s in steps]
    accepted = [s.num_accepted for s in steps]

    def moving(values: list[int]) -> list[float]:
        out, total = [], 0
        for i, v in enumerate(values):
            total += v - (values[i - window] if i >= window else 0)
            out.append(total / min(i + 1, window))
        return out

    drafted_avg, accepted_avg = moving(drafted), moving(accepted)
    rate = [a / d if d else 0.0 for a, d in zip(accepted_avg, drafted_avg, strict=True)]
    figure = Figure(figsize=(9, 6))
    top, bottom = figure.subplots(2, 1, sharex=True)
    top.plot(drafted_avg, label="drafted tokens / step")
    top.plot(accepted_avg, label="accepted tokens / step")
    top.set_ylabel(f"tokens (mean of {window} steps)")
    top.legend()
    bottom.plot(rate, color="tab:green")
    bottom.set_ylabel("acceptance rate")
    bottom.set_xlabel("step")
    bottom.set_ylim(0, 1.05)
    figure.suptitle("suffix decoding replay")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
