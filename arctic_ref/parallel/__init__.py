"""Parallel layouts: TP, Ulysses SP, SP×TP and Shift Parallelism (docs/parallel.md)."""

from arctic_ref.parallel.comm import Comm, CommCall, CountingComm, RankGroups, SoloComm, TorchComm, build_groups
from arctic_ref.parallel.cudagraph import GraphTables, default_capture_sizes, dp_padding, pad_sp, pad_to
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import ModeGroups, ShiftPolicy, StepMode, StepPlan, plan_step
from arctic_ref.parallel.ulysses import heads_to_seq, seq_to_heads

__all__ = [
    "Comm",
    "CommCall",
    "CountingComm",
    "GraphTables",
    "ModeGroups",
    "ParallelLayout",
    "RankGroups",
    "ShiftPolicy",
    "SoloComm",
    "StepMode",
    "StepPlan",
    "TorchComm",
    "build_groups",
    "default_capture_sizes",
    "dp_padding",
    "heads_to_seq",
    "pad_sp",
    "pad_to",
    "plan_step",
    "seq_to_heads",
]
