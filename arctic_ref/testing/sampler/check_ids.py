"""The rejection-sampler kit's check ids, what passing each one proves, and each one's category:
the one table the pytest plugin, ``arctic-ref check --impl`` and the docs read.

Categories (``CATEGORIES``):

- ``"semantics"``: what any correct rejection sampler with vLLM's argument list computes on valid
  input (docs/verification.md §1.3–§2, §5): output layout, acceptance, recovery, draw order, masks, no
  mutation, and refusing a ``max_spec_len`` over the limit instead of truncating.
- ``"strict"``: arctic_ref's stricter input contract (docs/verification.md §1.2): malformed shapes and
  counts, contradictory greedy flags and NaN rows (field bug F-4) raise ``ValueError``. A sampler that
  validates elsewhere, or follows vLLM 0.9.2 (which checks none of these), may leave them out:
  ``check_rejection_sampler(..., categories=("semantics",))`` reports them as skipped.
"""

from typing import Final

from arctic_ref.check_options import SamplerCategory

MEANINGS: Final[dict[str, str]] = {
    "E1": "output shape [B, max_spec_len+1], int32, on the logits' device",
    "E2": "rows left-packed, 1 <= L <= n+1, -1 after the prefix",
    "E3": "the accepted prefix equals the drafts; a rejected draft is not re-emitted",
    "E4": "all drafts accepted <=> the row ends with the bonus token",
    "E5": "greedy rows follow the argmax rule, independent of noise and other rows",
    "E6": "a zero-probability draft is never accepted; probability 1 always is",
    "E7": "a recovered id is in the vocabulary with positive residual probability",
    "E8": "acceptance and recovery equal the closed-form rule bit for bit (known randomness)",
    "E9": "one-hot draft_probs give the output of draft_probs=None",
    "E10": "permuting or splitting the batch permutes or splits the output",
    "E11": "greedy and draft-less rows advance no generator",
    "E12": "a seeded row draws n uniforms then V exponentials, as on a clone",
    "E13": "a seeded row depends only on its own inputs and generator",
    "E14": "no argument is mutated",
    "E15-SPEC-LEN": "max_spec_len over the profile's limit (33; 129 under vllm-0.32) is an error, never a "
    "truncation: any ValueError (vLLM 0.9.2 and 0.32 profiles: also vLLM's AssertionError)",
    "E15-SHAPES": "strict: malformed shapes and counts raise ValueError (draft ids outside [0, V), "
    "cu_num_draft_tokens != cumsum, max_spec_len < max(n))",
    "E15-FLAGS": "strict: all_greedy/all_random flags that contradict the temperatures raise ValueError",
    "E15-NAN": "strict: NaN in a random row's logits raises ValueError instead of emitting from it (F-4)",
    "E16": "temperatures below 1e-5 are greedy, 1e-5 is random",
    "E17": "temperature -> top-k (ties kept) -> top-p (maximum kept) on hand-built rows",
    "E18": "parse_output returns exactly the emitted lists",
    "E20": "greedy speculative generation equals plain greedy decoding, with six drafters",
    "RNG-ORDER": "per-request generators advance in vLLM's order (predicted on clones)",
    "S1": "per position, conditional on emission, tokens follow the target (chi-square, family alpha 1e-4)",
    "S2": "acceptance rate inside a 5-sigma band at every position; mean emitted length matches",
    "S3": "conditional on rejection, the recovered token follows the residual (chi-square)",
    "S4": "the exponential race alone follows w / sum(w) (chi-square)",
    "S5": "drafts never change the output distribution (exact 216-sequence GOF, chi-square)",
    "S5-SPEED": "an oracle drafter needs fewer verification steps than no drafter",
    "S-DESIGN": "every tested (position, branch) got enough conditional samples",
}

STRICT_IDS: Final = frozenset({"E15-SHAPES", "E15-FLAGS", "E15-NAN"})
CATEGORIES: Final[dict[str, SamplerCategory]] = {
    check_id: "strict" if check_id in STRICT_IDS else "semantics" for check_id in MEANINGS
}
"""Every sampler check's category (see the module docstring)."""
