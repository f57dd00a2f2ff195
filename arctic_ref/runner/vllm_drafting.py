"""Drafters with vLLM 0.32's own semantics, built from the ``speculative_config`` dict a user hands
vLLM (``--speculative-config``, ``LLM(speculative_config=...)``), so that a check can name and replay
exactly what an engine with that dict drafts.

Where each rule comes from (vLLM 0.32.0, paths under ``vllm/``):

* the dict: ``engine/arg_utils.py`` ``create_speculative_config`` turns dashes in keys into
  underscores and builds ``SpeculativeConfig(**dict)``, a pydantic dataclass that refuses unknown
  keys (``config/utils.py`` ``config``: ``extra="forbid"``); ``config/speculative.py``
  ``SpeculativeConfig.__post_init__`` infers the method and fills the n-gram window,
  ``_validate_suffix_decoding`` fills k for suffix decoding and checks its knobs, ``_verify_args``
  demands k > 0.
* n-gram: ``v1/spec_decode/ngram_proposer.py``, ``NgramProposer.propose`` (which rows) and
  ``_find_longest_matched_ngram_and_propose_tokens`` (the draft of one row).
* suffix decoding: ``v1/spec_decode/suffix_decoding.py``, ``SuffixDecodingProposer.__init__`` (the
  cache) and ``.propose`` (cache upkeep and the draft of each row, interleaved row by row).

Neither proposer gates on batch size: vLLM 0.32 has no ``disable_by_batch_size`` key (a dict that
has one is refused, as vLLM refuses it). The dynamic draft length
(``num_speculative_tokens_per_batch_size``) is accepted by vLLM but not modelled here, so it is
refused with a message saying so.
"""

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Self

from arctic_ref.runner.drafters import Drafter, NoDrafter, ngram_draft_longest
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.suffix.cache import SuffixDecodingCache

VllmMethod = Literal["ngram", "suffix"]

SPECULATIVE_CONFIG_KEYS: Final = frozenset(
    {
        "enforce_eager",
        "num_speculative_tokens",
        "model",
        "method",
        "draft_tensor_parallel_size",
        "tensor_parallel_size",
        "quantization",
        "moe_backend",
        "attention_backend",
        "kv_cache_dtype",
        "max_model_len",
        "revision",
        "code_revision",
        "index_share_for_mtp_iteration",
        "disable_padded_drafter_batch",
        "disable_eagle_block_drop",
        "use_local_argmax_reduction",
        "use_heterogeneous_vocab",
        "prompt_lookup_max",
        "prompt_lookup_min",
        "parallel_drafting",
        "target_model_config",
        "target_parallel_config",
        "num_speculative_tokens_per_batch_size",
        "draft_model_config",
        "draft_parallel_config",
        "suffix_decoding_max_tree_depth",
        "suffix_decoding_max_cached_requests",
        "suffix_decoding_max_spec_factor",
        "suffix_decoding_min_token_prob",
        "draft_load_config",
        "rejection_sample_method",
        "synthetic_acceptance_rates",
        "synthetic_acceptance_length",
        "enable_adaptive_verification",
        "draft_sample_method",
        "dspark_draft_topk",
    }
)
"""Every field of vLLM 0.32's ``SpeculativeConfig``: a key outside it is refused by vLLM."""

MODELLED_KEYS: Final = frozenset(
    {
        "method",
        "model",
        "num_speculative_tokens",
        "max_model_len",
        "prompt_lookup_min",
        "prompt_lookup_max",
        "suffix_decoding_max_tree_depth",
        "suffix_decoding_max_cached_requests",
        "suffix_decoding_max_spec_factor",
        "suffix_decoding_min_token_prob",
    }
)
"""The keys read here. ``model`` only picks the method when ``method`` is absent, and the dict's
``max_model_len`` sizes a draft *model* (``_maybe_override_draft_max_model_len``): neither proposer
reads it, and their length cap is the target's ``max_model_len``, the argument of ``parse``."""

NGRAM_DEFAULT_WINDOW: Final = 5
"""``prompt_lookup_min`` and ``prompt_lookup_max`` when neither is given (speculative.py,
``__post_init__``); one given alone stands for both."""
SUFFIX_MAX_TREE_DEPTH: Final = 24
SUFFIX_MAX_CACHED_REQUESTS: Final = 10_000
SUFFIX_MAX_SPEC_FACTOR: Final = 1.0
SUFFIX_MIN_TOKEN_PROB: Final = 0.1
"""``SpeculativeConfig``'s field defaults for suffix decoding; k defaults to the tree depth."""


def _integer(config: Mapping[str, object], key: str, *, least: int | None = None) -> int | None:
    """The key's value: None or an integer (at least ``least``: pydantic's bound on the field)."""
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or (least is not None and value < least):
        raise ValueError(f"speculative_config[{key!r}] = {value!r} must be None or an integer >= {least}")
    return value


def _number(config: Mapping[str, object], key: str, default: float) -> float:
    """The key's value, an int or a float, as a float; ``default`` when absent."""
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"speculative_config[{key!r}] = {value!r} must be a number")
    return float(value)


def _method(config: Mapping[str, object]) -> VllmMethod:
    """``__post_init__``: no method and model "ngram" or "[ngram]" → "ngram" (any other model would be a
    draft model or a custom class); "[ngram]" → "ngram"."""
    method, model = config.get("method"), config.get("model")
    if model is not None and not isinstance(model, str):
        raise ValueError(f"speculative_config['model'] = {model!r} must be a string or None")
    if method is None:
        method = "ngram" if model in ("ngram", "[ngram]") else "draft_model"
    if method == "[ngram]":
        method = "ngram"
    if method == "ngram":
        return "ngram"
    if method == "suffix":
        return "suffix"
    raise ValueError(f"speculative_config method {method!r}: arctic_ref models vLLM's 'ngram' and 'suffix' only")


def _check_keys(config: Mapping[str, object]) -> None:
    unknown = sorted(k for k in config if k not in SPECULATIVE_CONFIG_KEYS)
    if unknown:
        raise ValueError(f"speculative_config keys {unknown} are not fields of vLLM 0.32's SpeculativeConfig")
    unmodelled = sorted(k for k in config if k not in MODELLED_KEYS)
    if unmodelled:
        raise ValueError(f"speculative_config keys {unmodelled} are vLLM's but not modelled by arctic_ref")


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmDraftSemantics:
    """What an engine with one ``speculative_config`` drafts: the method, k and the knobs, after vLLM's
    defaults are filled in. ``parse`` is the one constructor that applies vLLM's rules; building the
    value directly checks only its own invariants."""

    method: VllmMethod
    num_speculative_tokens: int
    """k: the n-gram draft length, or the cap on a suffix draft."""
    max_model_len: int
    """M, the target's: an n-gram draft ends at M, a suffix draft at M − 1."""
    prompt_lookup_min: int = NGRAM_DEFAULT_WINDOW
    prompt_lookup_max: int = NGRAM_DEFAULT_WINDOW
    suffix_decoding_max_tree_depth: int = SUFFIX_MAX_TREE_DEPTH
    """D: the suffix trees' depth and the pattern's length."""
    suffix_decoding_max_cached_requests: int = SUFFIX_MAX_CACHED_REQUESTS
    """Responses the global tree keeps, evicted FIFO (0: none, the prompt trees still draft)."""
    suffix_decoding_max_spec_factor: float = SUFFIX_MAX_SPEC_FACTOR
    suffix_decoding_min_token_prob: float = SUFFIX_MIN_TOKEN_PROB

    def __post_init__(self) -> None:
        if not 1 <= self.prompt_lookup_min <= self.prompt_lookup_max:
            raise ValueError(
                f"need 1 <= prompt_lookup_min({self.prompt_lookup_min}) <= prompt_lookup_max({self.prompt_lookup_max})"
            )
        if self.suffix_decoding_max_tree_depth < 1 or self.suffix_decoding_max_cached_requests < 0:
            raise ValueError(
                f"suffix_decoding_max_tree_depth({self.suffix_decoding_max_tree_depth}) must be >= 1 and "
                f"suffix_decoding_max_cached_requests({self.suffix_decoding_max_cached_requests}) >= 0"
            )
        if self.suffix_decoding_max_spec_factor < 0 or not 0 <= self.suffix_decoding_min_token_prob <= 1:
            raise ValueError(
                f"suffix_decoding_max_spec_factor({self.suffix_decoding_max_spec_factor}) must be >= 0 and "
                f"suffix_decoding_min_token_prob({self.suffix_decoding_min_token_prob}) in [0, 1]"
            )
        # after the knobs: a suffix k of 0 comes from a depth of 0, which vLLM names first
        if self.num_speculative_tokens < 1 or self.max_model_len < 1:
            raise ValueError(
                f"num_speculative_tokens({self.num_speculative_tokens}) and max_model_len({self.max_model_len}) "
                "must be >= 1"
            )

    @classmethod
    def parse(cls, speculative_config: Mapping[str, object], *, max_model_len: int) -> Self:
        """vLLM's reading of the dict (module docstring). A bad key or value raises ``ValueError`` naming
        it; nothing is built before. Types are checked for every key (pydantic's, without its coercion of
        strings), ranges as vLLM checks them: those of the method in use (here in ``__post_init__``), plus
        pydantic's field bounds. Knobs of the other method are otherwise ignored, as vLLM ignores them."""
        config = {key.replace("-", "_"): value for key, value in speculative_config.items()}
        _check_keys(config)
        method = _method(config)
        _integer(config, "max_model_len", least=1)
        k = _integer(config, "num_speculative_tokens", least=1)
        low = _integer(config, "prompt_lookup_min", least=1)
        high = _integer(config, "prompt_lookup_max", least=1)
        depth = _integer(config, "suffix_decoding_max_tree_depth")
        cached = _integer(config, "suffix_decoding_max_cached_requests")
        factor = _number(config, "suffix_decoding_max_spec_factor", SUFFIX_MAX_SPEC_FACTOR)
        min_prob = _number(config, "suffix_decoding_min_token_prob", SUFFIX_MIN_TOKEN_PROB)
        if method == "ngram":
            return cls._ngram(k, low, high, max_model_len)
        return cls._suffix(k, depth, cached, factor, min_prob, max_model_len)

    @classmethod
    def _ngram(cls, k: int | None, low: int | None, high: int | None, max_model_len: int) -> Self:
        if k is None:
            raise ValueError("speculative_config needs num_speculative_tokens for method 'ngram'")
        # a bound alone stands for both, neither gives the default window (given bounds are >= 1: truthy)
        low, high = low or high or NGRAM_DEFAULT_WINDOW, high or low or NGRAM_DEFAULT_WINDOW
        return cls(
            method="ngram",
            num_speculative_tokens=k,
            max_model_len=max_model_len,
            prompt_lookup_min=low,
            prompt_lookup_max=high,
        )

    @classmethod
    def _suffix(
        cls, k: int | None, depth: int | None, cached: int | None, factor: float, min_prob: float, max_model_len: int
    ) -> Self:
        depth = SUFFIX_MAX_TREE_DEPTH if depth is None else depth
        cached = SUFFIX_MAX_CACHED_REQUESTS if cached is None else cached
        return cls(
            method="suffix",
            num_speculative_tokens=depth if k is None else k,
            max_model_len=max_model_len,
            suffix_decoding_max_tree_depth=depth,
            suffix_decoding_max_cached_requests=cached,
            suffix_decoding_max_spec_factor=factor,
            suffix_decoding_min_token_prob=min_prob,
        )

    @property
    def summary(self) -> str:
        """The semantics in one line, for reports."""
        if self.method == "ngram":
            return (
                f"vLLM 0.32 ngram: k={self.num_speculative_tokens}, "
                f"n in [{self.prompt_lookup_min}, {self.prompt_lookup_max}], max_model_len={self.max_model_len}"
            )
        return (
            f"vLLM 0.32 suffix: k={self.num_speculative_tokens}, depth={self.suffix_decoding_max_tree_depth}, "
            f"cached={self.suffix_decoding_max_cached_requests}, factor={self.suffix_decoding_max_spec_factor}, "
            f"min_prob={self.suffix_decoding_min_token_prob}, max_model_len={self.max_model_len}"
        )


def vllm_ngram_draft(tokens: Sequence[int], semantics: VllmDraftSemantics) -> list[int]:
    """``_find_longest_matched_ngram_and_propose_tokens`` on one row's prompt + output: k is cut to
    M − N (so the draft may end exactly at M); then the longest n in [min, max] whose last n tokens
    occur earlier (overlapping the suffix allowed), the earliest such occurrence, and up to k tokens
    after it. That is ``ngram_draft_longest`` (the runner's rule for vLLM ≥ 0.10.1) at k' = min(k, M − N)."""
    k = min(semantics.num_speculative_tokens, semantics.max_model_len - len(tokens))
    return ngram_draft_longest(tokens, k, semantics.prompt_lookup_min, semantics.prompt_lookup_max)


@dataclass(frozen=True, slots=True)
class VllmNgramDrafter:
    """``NgramProposer.propose``: a row with no sampled token (a partial prefill) gets []; every other
    row its ``vllm_ngram_draft``. (vLLM also skips rows at N ≥ M; the k cut to M − N ≤ 0 already gives
    them [].) Stateless."""

    semantics: VllmDraftSemantics

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        return [vllm_ngram_draft(row.token_ids, self.semantics) if row.sampled else [] for row in rows]


@dataclass(slots=True)
class VllmSuffixDrafter:
    """``SuffixDecodingProposer.propose``, row by row in batch order:

    1. no sampled token (a partial prefill): [] and nothing fed; N ≥ M: [] and nothing fed either;
    2. a request not active is (re)started with its prompt, after evicting a cached response of the
       same id; then this step's sampled tokens are appended (``add_active_response``);
    3. pattern = the last min(N, D) tokens; the draft is ``speculate(pattern, max_spec_tokens =
       min(k, M − N − 1), factor, min_token_prob)`` with ``max_spec_offset`` 0 and no tree
       speculation (the cache's defaults), its ``token_ids``.

    Because feeding and speculating alternate, a row's draft sees the tokens fed by the rows before it
    in this step, not those after it. After the batch, active requests absent from it are stopped
    (their responses stay cached, FIFO up to ``suffix_decoding_max_cached_requests``)."""

    semantics: VllmDraftSemantics
    cache: SuffixDecodingCache = field(init=False)

    def __post_init__(self) -> None:
        self.cache = SuffixDecodingCache(
            self.semantics.suffix_decoding_max_tree_depth, self.semantics.suffix_decoding_max_cached_requests
        )

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        drafts = [self._propose_row(row) for row in rows]
        present: set[Hashable] = {row.req_id for row in rows}
        for req_id in [r for r in self.cache.active_requests if r not in present]:
            self.cache.stop_request(req_id)
        return drafts

    def _propose_row(self, row: DraftRow) -> list[int]:
        s, n = self.semantics, row.num_tokens
        if not row.sampled or n >= s.max_model_len:
            return []
        if row.req_id not in self.cache.active_requests:
            if row.req_id in self.cache.cached_requests:
                self.cache.evict_cached_response(row.req_id)
            self.cache.start_request(row.req_id, list(row.token_ids[: row.num_prompt_tokens]))
        self.cache.add_active_response(row.req_id, list(row.sampled))
        pattern = list(row.token_ids[max(0, n - s.suffix_decoding_max_tree_depth) : n])
        draft = self.cache.speculate(
            row.req_id,
            pattern,
            max_spec_tokens=min(s.num_speculative_tokens, s.max_model_len - n - 1),
            max_spec_factor=s.suffix_decoding_max_spec_factor,
            min_token_prob=s.suffix_decoding_min_token_prob,
        )
        return list(draft.token_ids)


def new_vllm_drafter(semantics: VllmDraftSemantics) -> VllmNgramDrafter | VllmSuffixDrafter:
    """A fresh drafter with these semantics (an empty suffix cache for "suffix")."""
    return VllmNgramDrafter(semantics) if semantics.method == "ngram" else VllmSuffixDrafter(semantics)


def drafter_for(speculative_config: Mapping[str, object] | None, *, max_model_len: int) -> Drafter:
    """The drafter an engine with this ``speculative_config`` and target ``max_model_len`` runs: none
    for None, else ``new_vllm_drafter(VllmDraftSemantics.parse(...))``."""
    if speculative_config is None:
        return NoDrafter()
    return new_vllm_drafter(VllmDraftSemantics.parse(speculative_config, max_model_len=max_model_len))


def replay_drafts(
    semantics: VllmDraftSemantics, prompt: Sequence[int], steps: Sequence[Sequence[int]]
) -> list[list[int]]:
    """The drafts a fresh drafter with ``semantics`` proposes for one request alone in the engine: after
    step i the request holds prompt + steps[0] + … + steps[i] (each this step's sampled tokens; an
    empty step is a partial prefill), and entry i is its draft."""
    drafter = new_vllm_drafter(semantics)
    tokens = list(prompt)
    out: list[list[int]] = []
    for sampled in steps:
        tokens.extend(sampled)
        row = DraftRow(req_id="replay", token_ids=list(tokens), num_prompt_tokens=len(prompt), sampled=list(sampled))
        out.extend(drafter.propose([row]))
    return out
