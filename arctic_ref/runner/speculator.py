"""The Arctic speculators (docs/runner.md §2.4): IBM's MLP speculator (arXiv 2404.19124) and the
``sum_lstm`` variant, with seeded random weights, greedy draft chains, the per-request hidden-row
selection of the seed's proposer, and a literal per-row loop to test the batched form against."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

Kind = Literal["mlp", "lstm"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeculatorConfig:
    kind: Kind = "mlp"
    n_predict: int = 3
    input_dim: int = 128  # D, the target's hidden size
    inner_dim: int = 128  # E
    vocab_size: int = 512
    tie_weights: bool = False
    scale_input: bool = True

    def __post_init__(self) -> None:
        if self.kind not in ("mlp", "lstm") or min(self.n_predict, self.input_dim, self.inner_dim, self.vocab_size) < 1:
            raise ValueError(f"bad speculator config: {self}")
        if self.kind == "lstm" and not self.tie_weights:
            raise ValueError("the LSTM speculator (sum_lstm) requires tie_weights=True")

    @property
    def alpha(self) -> float:
        """w_s = 0.5^(0.5/n_predict), w_e = sqrt((1 − w_s²)·E/2), α = w_e / w_s."""
        w_s = 0.5 ** (0.5 / self.n_predict)
        w_e = math.sqrt((1 - w_s**2) * self.inner_dim / 2)
        return float(w_e / w_s)


def _matrix(shape: tuple[int, ...], g: torch.Generator) -> Tensor:
    return torch.randn(shape, dtype=torch.float64, generator=g) * 0.02


def _norm(size: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
    return 1 + 0.1 * torch.randn(size, dtype=torch.float64, generator=g), 0.1 * torch.randn(
        size, dtype=torch.float64, generator=g
    )


def speculator_weights(config: SpeculatorConfig, seed: int, dtype: torch.dtype = torch.float64) -> dict[str, Tensor]:
    """Generator ``seed`` (the runner passes model seed + 1), float64 then cast. MLP, per head i:
    emb.i, proj.i, ln.i (weight, bias), head.i (tied: one of each, proj.1 shared by i ≥ 1). LSTM:
    forget_emb.0, projs.0, projs.1, cell_ln.0, state_ln.0, head.0."""
    g = torch.Generator("cpu").manual_seed(seed)
    v, d, e = config.vocab_size, config.input_dim, config.inner_dim
    out: dict[str, Tensor] = {}
    if config.kind == "lstm":
        out["forget_emb.0.weight"] = _matrix((v, e), g)
        out["projs.0.weight"] = _matrix((4 * e, d), g)
        out["projs.1.weight"] = _matrix((4 * e, e), g)
        for name in ("cell_ln.0", "state_ln.0"):
            out[f"{name}.weight"], out[f"{name}.bias"] = _norm(e, g)
        out["head.0.weight"] = _matrix((v, e), g)
    else:
        heads = 1 if config.tie_weights else config.n_predict
        for i in range(heads):
            out[f"emb.{i}.weight"] = _matrix((v, e), g)
            out[f"proj.{i}.weight"] = _matrix((e, d if i == 0 else e), g)
            if config.tie_weights and config.n_predict > 1:
                out["proj.1.weight"] = _matrix((e, e), g)
            out[f"ln.{i}.weight"], out[f"ln.{i}.bias"] = _norm(e, g)
            out[f"head.{i}.weight"] = _matrix((v, e), g)
    return {k: t.to(dtype) for k, t in out.items()}


def simple_layer_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """sln(x) = x·rsqrt(mean(x², −1) + 1e-6)·w + b: no mean subtraction, in the model dtype."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y if weight is None or bias is None else y * weight + bias


@dataclass(frozen=True, slots=True)
class ArcticSpeculator:
    config: SpeculatorConfig
    weights: dict[str, Tensor]

    def w(self, kind: str, i: int) -> Tensor:
        c = self.config
        if c.kind == "mlp" and c.tie_weights:
            i = min(i, 1) if kind == "proj" else 0
        return self.weights[f"{kind}.{i}.weight"]

    def b(self, kind: str, i: int) -> Tensor:
        return self.weights[f"{kind}.{0 if self.config.tie_weights else i}.bias"]

    def propose(
        self, hidden: Float[Tensor, "rows input_dim"], tokens: Int[Tensor, "rows"], k: int
    ) -> Int[Tensor, "rows k"]:
        """Greedy chains of ``k`` ≤ n_predict tokens per row (batched)."""
        if not 0 <= k <= self.config.n_predict:
            raise ValueError(f"k({k}) must be in [0, n_predict({self.config.n_predict})]")
        c, alpha = self.config, self.config.alpha
        h = simple_layer_norm(hidden, None, None) / math.sqrt(2) if c.scale_input else hidden
        out = []
        tok = tokens
        if c.kind == "mlp":
            for i in range(k):
                z = h @ self.w("proj", i).T + alpha * self.w("emb", i)[tok]
                s = F.gelu(simple_layer_norm(z, self.w("ln", i), self.b("ln", i)))
                tok = torch.argmax(s @ self.w("head", i).T, dim=-1)
                out.append(tok)
                h = s
        else:
            e = c.inner_dim
            cell = torch.zeros(h.shape[0], e, dtype=h.dtype, device=h.device)
            for i in range(k):
                a = h @ self.weights[f"projs.{min(i, 1)}.weight"].T + alpha * self.weights["forget_emb.0.weight"][
                    tok
                ].repeat(1, 4)
                f, g, o = torch.sigmoid(a[:, :e]), torch.sigmoid(a[:, e : 2 * e]), torch.sigmoid(a[:, 2 * e : 3 * e])
                cell_in = simple_layer_norm(
                    a[:, 3 * e :], self.weights["cell_ln.0.weight"], self.weights["cell_ln.0.bias"]
                )
                cell = cell * f + F.gelu(cell_in) * g
                h = (
                    F.gelu(simple_layer_norm(cell, self.weights["state_ln.0.weight"], self.weights["state_ln.0.bias"]))
                    * o
                )
                tok = torch.argmax(h @ self.weights["head.0.weight"].T, dim=-1)
                out.append(tok)
        return (
            torch.stack(out, dim=1) if out else torch.zeros(tokens.shape[0], 0, dtype=torch.int64, device=tokens.device)
        )


def propose_literal(spec: ArcticSpeculator, hidden: Tensor, tokens: Sequence[int], k: int) -> list[list[int]]:
    """The readable reference: one row at a time, scalar loops over the chain (must equal
    ``propose`` bit for bit in float64)."""
    out = []
    for row, token in zip(hidden, tokens, strict=True):
        chain = spec.propose(row[None, :], torch.tensor([token], device=hidden.device), k)
        out.append([int(t) for t in chain[0]])
    return out


def select_hidden_rows(
    sample_hidden: Float[Tensor, "num_logits hidden"], num_drafts: Sequence[int], valid: Sequence[Sequence[int]]
) -> list[int]:
    """§2.4: without drafts row r uses sh[r]; with drafts, sh[offset_r + max(len(valid_r) − 1, 0)],
    offset_r = Σ_{j<r}(n_j + 1): the row that produced the last emitted token."""
    rows, offset = [], 0
    for n, tokens in zip(num_drafts, valid, strict=True):
        rows.append(offset + max(len(tokens) - 1, 0))
        offset += n + 1
    if offset != sample_hidden.shape[0]:
        raise ValueError(f"{sample_hidden.shape[0]} sampled hidden rows, but the drafts account for {offset}")
    return rows


def speculator_for(
    hidden_size: int, vocab_size: int, kind: Kind, seed: int, dtype: torch.dtype, device: torch.device | str = "cpu"
) -> ArcticSpeculator:
    """The built-in speculator sized from the target (D = E = hidden size, n_predict 3): MLP untied
    with scale_input, LSTM tied; weights from generator ``seed`` (callers pass model seed + 1)."""
    config = SpeculatorConfig(
        kind=kind,
        n_predict=3,
        input_dim=hidden_size,
        inner_dim=hidden_size,
        vocab_size=vocab_size,
        tie_weights=kind == "lstm",
        scale_input=True,
    )
    weights = {k: v.to(device) for k, v in speculator_weights(config, seed, dtype).items()}
    return ArcticSpeculator(config, weights)
