"""Shape aliases and identifiers shared across arctic_ref.

Dimension glossary (vLLM's names): ``num_tokens`` (T, flattened draft rows), ``num_reqs`` (B),
``vocab`` (V), ``max_spec_len``, ``num_draft`` (drafts of one request), ``heads``, ``head_dim``.
Shapes are checked at run time in tests (jaxtyping + beartype, see ``tests/conftest.py``).
"""

from typing import NewType, TypeAlias

from jaxtyping import Float, Int
from torch import Tensor

ReqId = NewType("ReqId", str)
SeqId = NewType("SeqId", int)

TokenIds: TypeAlias = Int[Tensor, "num_tokens"]
Logits: TypeAlias = Float[Tensor, "num_tokens vocab"]
Probs: TypeAlias = Float[Tensor, "num_tokens vocab"]
PerRequest: TypeAlias = Int[Tensor, "num_reqs"]
Output: TypeAlias = Int[Tensor, "num_reqs out_cols"]  # out_cols = max_spec_len + 1
