"""Values that cross a boundary are frozen dataclasses (STYLE.md §4). The table pins each dataclass of
the mutated packages (suffix, spec, parallel, and the runner's drafters) to its declared flags — frozen, slotted, keyword-only —
so that loosening one is a deliberate edit here; the mutable ones are the upstream-shaped drafts and
the accumulators a run fills in."""

import dataclasses
import importlib
import pkgutil

import pytest

FLAGS = {  # (frozen, slots, every field keyword-only)
    "arctic_ref.suffix.cache.SuffixDecodingDraft": (False, False, False),  # upstream's mutable draft
    "arctic_ref.suffix.draft.Draft": (False, False, False),  # upstream's mutable draft
    "arctic_ref.suffix.simulate.SimulationConfig": (True, True, True),
    "arctic_ref.suffix.simulate.StepRecord": (True, True, True),
    "arctic_ref.suffix.simulate.Replay": (False, True, True),  # filled in during a replay
    "arctic_ref.suffix.trace_file.TraceRequest": (True, True, True),
    "arctic_ref.spec.drafts.DraftRow": (True, True, True),
    "arctic_ref.spec.drafts.DraftConfig": (True, True, True),
    "arctic_ref.spec.drafts.SuffixQuery": (True, True, True),
    "arctic_ref.spec.drafts.DraftRules": (True, True, True),
    "arctic_ref.spec.drafts.DraftStats": (False, True, True),  # an accumulator
    "arctic_ref.spec.loop.LoopRules": (True, True, True),
    "arctic_ref.spec.metadata.SamplingMetadata": (True, True, True),
    "arctic_ref.spec.metadata.SpecDecodeMetadata": (True, True, True),
    "arctic_ref.spec.noise.RejectionNoise": (True, True, True),
    "arctic_ref.spec.profile.SamplerProfile": (True, True, True),
    "arctic_ref.spec.rejection_graph._Captured": (True, True, True),
    "arctic_ref.spec.rejection_triton.ValueChecks": (True, True, True),
    "arctic_ref.spec.rejection_triton.DrawnNoise": (True, True, True),
    "arctic_ref.spec.torch_philox.PhiloxDraw": (True, True, True),
    "arctic_ref.parallel.comm.SoloComm": (True, True, False),
    "arctic_ref.parallel.comm.TorchComm": (True, True, False),
    "arctic_ref.parallel.comm.CommCall": (True, True, False),
    "arctic_ref.parallel.comm.CountingComm": (True, True, False),
    "arctic_ref.parallel.comm.RankGroups": (True, True, False),
    "arctic_ref.parallel.cudagraph.GraphTables": (True, True, False),
    "arctic_ref.parallel.launch.RankInfo": (True, True, False),
    "arctic_ref.parallel.layout.ParallelLayout": (True, True, False),
    "arctic_ref.parallel.plan.ShiftPolicy": (True, True, False),
    "arctic_ref.parallel.plan.ModeGroups": (True, True, True),
    "arctic_ref.parallel.plan.StepPlan": (True, True, True),
    "arctic_ref.parallel.ulysses.UlyssesExchange": (True, True, True),
    "arctic_ref.runner.drafters.NoDrafter": (True, True, True),
    "arctic_ref.runner.drafters.SuffixDrafter": (False, True, False),  # owns its suffix cache
    "arctic_ref.runner.drafters.NgramDrafter": (True, True, False),
    "arctic_ref.runner.drafters.HiddenRowProposer": (True, True, False),
    "arctic_ref.runner.drafters.SpeculatorDrafter": (False, True, False),  # owns its suffix cache
}
MODULES = ("arctic_ref.runner.drafters",)
"""Mutated modules outside the three packages."""


def _dataclasses() -> dict[str, type]:
    found: dict[str, type] = {}
    for package in ("suffix", "spec", "parallel"):
        root = importlib.import_module(f"arctic_ref.{package}")
        for info in pkgutil.walk_packages(root.__path__, f"arctic_ref.{package}."):
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == info.name:
                    found[f"{info.name}.{name}"] = obj
    for name in MODULES:
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == name:
                found[f"{name}.{attr}"] = obj
    return found


def test_the_table_lists_every_dataclass() -> None:
    assert sorted(_dataclasses()) == sorted(FLAGS)


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_declared_flags(name: str) -> None:
    cls = _dataclasses()[name]
    fields = dataclasses.fields(cls)
    flags = (cls.__dataclass_params__.frozen, "__slots__" in cls.__dict__, all(f.kw_only for f in fields))  # type: ignore[attr-defined]
    assert flags == FLAGS[name]
    if flags[0] and fields:
        instance = object.__new__(cls)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(instance, fields[0].name, None)
