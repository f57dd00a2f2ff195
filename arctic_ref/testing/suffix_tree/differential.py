"""``run_differential``: seeded random operations on several suffix implementations, compared.

The deterministic sibling of ``SuffixTreeMachine`` for places without Hypothesis (``arctic-ref
check``): the same rules (extend with copied substrings, remove, speculate over docs/suffix-decoding.md's edge
values), the same comparisons (drafts as float32 bytes, ``check_integrity``, dumps).
"""

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from arctic_ref.testing.packed_draft import pack
from arctic_ref.testing.suffix_strategies import DEPTHS, FACTORS, MAX_SPEC_TOKENS, MIN_PROBS, OFFSETS, SEQ_IDS
from arctic_ref.testing.suffix_tree.tree_machine import (
    Implementation,
    InspectableIndex,
    SelfCheckingIndex,
    SuffixIndex,
    first_dump_difference,
)


@dataclass(slots=True, kw_only=True)
class DifferentialReport:
    """What a differential run compared, and the first disagreement if any."""

    trials: int = 0
    operations: int = 0
    speculate_calls: int = 0
    failures: list[str] = field(default_factory=list)


def _copied(rng: random.Random, seqs: dict[int, list[int]], vocab: int, size: int) -> list[int]:
    live = [s for s in seqs.values() if s]
    if not live or rng.random() < 0.25:
        return [rng.randrange(vocab) for _ in range(rng.randint(0, size))]
    source = rng.choice(live)
    start = rng.randrange(len(source))
    out = source[start : start + rng.randint(0, size)]
    if out and rng.random() < 0.5:
        out[rng.randrange(len(out))] = rng.randrange(vocab)
    return out


def run_differential(
    implementations: Sequence[Implementation], *, seed: int = 0, trials: int = 100, steps: int = 40
) -> DifferentialReport:
    """Drive every implementation through the same random operations; stop at the first failure."""
    rng = random.Random(seed)
    report = DifferentialReport()
    for trial in range(trials):
        depth = rng.choice(DEPTHS)
        vocab = rng.randint(2, 6)
        trees: list[SuffixIndex] = [impl.make_tree(depth) for impl in implementations]
        seqs: dict[int, list[int]] = {}
        report.trials += 1
        for step in range(steps):
            report.operations += 1
            roll = rng.random()
            where = f"seed {seed} trial {trial} step {step} (max_depth {depth})"
            if roll < 0.45:
                seq_id = rng.choice(SEQ_IDS)
                tokens = _copied(rng, seqs, vocab, 8)
                for tree in trees:
                    tree.extend(seq_id, tokens)
                if tokens:
                    seqs.setdefault(seq_id, []).extend(tokens)
            elif roll < 0.6:
                seq_id = rng.choice([*seqs, 7])
                for tree in trees:
                    tree.remove(seq_id)
                seqs.pop(seq_id, None)
            else:
                context = _copied(rng, seqs, vocab, 12)
                args = (
                    rng.choice(MAX_SPEC_TOKENS),
                    rng.choice(FACTORS),
                    rng.choice(OFFSETS),
                    rng.choice(MIN_PROBS),
                    rng.random() < 0.5,
                )
                results = [pack(tree.speculate(context, *args)) for tree in trees]
                report.speculate_calls += 1
                for impl, result in zip(implementations[1:], results[1:], strict=True):
                    if result != results[0]:
                        report.failures.append(
                            f"{where}: speculate({context}, {args}): {impl.name} {result} vs {results[0]}"
                        )
                        return report
            dumps = []
            for impl, tree in zip(implementations, trees, strict=True):
                problem = tree.check_integrity() if isinstance(tree, SelfCheckingIndex) else ""
                if problem:
                    report.failures.append(f"{where}: {impl.name}.check_integrity(): {problem}")
                    return report
                if isinstance(tree, InspectableIndex):
                    dumps.append((impl.name, tree.dump()))
            for name, dump in dumps[1:]:
                if dump != dumps[0][1]:
                    report.failures.append(f"{where}: {first_dump_difference(dumps[0][0], dumps[0][1], name, dump)}")
                    return report
    return report
