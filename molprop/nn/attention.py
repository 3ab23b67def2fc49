"""Attention blocks of ESA/NSA (Set Transformer style): MHA, MLP, MAB, SAB, PMA.

MAB(X, Y, mask):  H = X + MHA(LN(X), LN(Y), mask);  out = H + MLP(LN(H))      (pre-LN)
                  H = LN(X + MHA(X, Y, mask));     out = LN(H + MLP(H))       (post-LN)
SAB(X)  = MAB(X, X, padding mask)            M-block = MAB(X, X, structure mask)
PMA(X)  = MAB(S, X, padding mask) with k learnable seeds S.

Masks are boolean, True = may attend, or an equivalent float bias (0 / -inf, see
``nn.encoder.additive_mask``); shape (B, Lq or 1, Lk), broadcast (not repeated) over heads inside
``scaled_dot_product_attention``.

Large graphs: ``scaled_dot_product_attention`` converts a boolean mask to a float copy
(4 bytes per entry) on every call. When a per-query mask has more than
``QUERY_CHUNK_ELEMENTS`` entries, the queries are processed in row chunks, so only one chunk's
float mask exists at a time (query rows are independent, so the result is the same; the
chunks' masks are views of the boolean mask, so autograd keeps no copies). This is what lets a
single graph of 30,000 edges train on a CPU (``benchmarks/mask_scaling.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import nn

from molprop.errors import ConfigError

MlpKind = Literal["standard", "swiglu"]
MLP_KINDS: tuple[str, ...] = get_args(MlpKind)


@dataclass(frozen=True)
class BlockConfig:
    """Settings shared by every attention block of a model (encoder M/S blocks, PMA, the SABs
    over the seeds): ``heads`` attention heads; ``mlp_mult`` MLP width / model width;
    ``mlp_kind`` standard|swiglu; ``pre_ln`` pre-LN (else post-LN) blocks; ``dropout`` on the
    MLP hidden layer and both residual branches; ``attn_dropout`` on the attention weights.
    Built by ``ModelConfig.block`` (the JSON keeps these as flat ``model`` keys)."""

    heads: int = 8
    mlp_mult: int = 2
    mlp_kind: MlpKind = "standard"
    pre_ln: bool = True
    dropout: float = 0.0
    attn_dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.mlp_kind not in MLP_KINDS:
            raise ConfigError(f"MLP kind must be one of {MLP_KINDS}, got {self.mlp_kind!r}")
        if self.heads < 1 or self.mlp_mult < 1:
            raise ConfigError(f"heads and mlp_mult must be >= 1, got {self.heads}, {self.mlp_mult}")
        for name in ("dropout", "attn_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {getattr(self, name)}")


class MLP(nn.Module):
    """``standard``: Linear-GELU-Dropout-Linear; ``swiglu``: (SiLU(xW) * xV) U; hidden width
    ``dim * mult``.

    Shapes:
        x: (..., dim) -> (..., dim)
    """

    def __init__(self, dim: int, mult: int = 2, kind: MlpKind = "standard", dropout: float = 0.0):
        super().__init__()
        hidden = dim * mult
        self.kind = kind
        if kind == "swiglu":
            self.gate = nn.Linear(dim, 2 * hidden)
        elif kind == "standard":
            self.gate = nn.Linear(dim, hidden)
        else:
            raise ValueError(f"unknown MLP kind {kind!r} {MLP_KINDS}")
        self.out = nn.Linear(hidden, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.gate(x)
        if self.kind == "swiglu":
            a, b = h.chunk(2, dim=-1)
            h = F.silu(a) * b
        else:
            h = F.gelu(h)
        return self.out(self.dropout(h))


QUERY_CHUNK_ELEMENTS = 1 << 25  # mask entries per SDPA call (128 MiB as float32)


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over ``heads`` heads of width ``dim / heads``:
    ``proj(concat_h softmax(Q_h K_h^T / sqrt(d/H) + mask) V_h)`` with Q = q(xq), [K, V] = kv(xkv).

    Shapes:
        xq: (B, Lq, dim); xkv: (B, Lk, dim);
        mask: (B, Lq or 1, Lk) bool (True = may attend) or float bias -> (B, Lq, dim)
    """

    def __init__(self, dim: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if dim % heads:
            raise ValueError(f"hidden dim {dim} is not divisible by {heads} heads")
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dropout = dropout

    def forward(self, xq: torch.Tensor, xkv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, lq, d = xq.shape
        lk = xkv.shape[1]
        h = self.heads
        q = self.q(xq).view(b, lq, h, d // h).transpose(1, 2)  # (B, H, Lq, d/H)
        kv = self.kv(xkv).view(b, lk, 2, h, d // h).permute(2, 0, 3, 1, 4)
        # unbind is what unpacking a tensor calls; called directly, a trace does not warn
        k, v = kv.unbind(0)  # 2 x (B, H, Lk, d/H)
        p = self.dropout if self.training else 0.0
        if mask.shape[1] == 1 or b * lq * lk <= QUERY_CHUNK_ELEMENTS:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None], dropout_p=p)
        else:  # (B, H, Lq, d/H), query rows in chunks (see module docstring)
            step = max(1, QUERY_CHUNK_ELEMENTS // (b * lk))
            out = torch.cat(
                [
                    F.scaled_dot_product_attention(
                        q[:, :, i : i + step],
                        k,
                        v,
                        attn_mask=mask[:, None, i : i + step],
                        dropout_p=p,
                    )
                    for i in range(0, lq, step)
                ],
                dim=2,
            )
        return self.proj(out.transpose(1, 2).reshape(b, lq, d))


class MAB(nn.Module):
    """Multihead attention block (see module docstring); SAB and the encoder's M blocks are MABs
    with ``y = x``.

    Shapes:
        x: (B, Lq, dim) queries; y: (B, Lk, dim) keys/values;
        mask: (B, Lq or 1, Lk) -> (B, Lq, dim)
    """

    def __init__(self, dim: int, block: BlockConfig = BlockConfig()):
        super().__init__()
        self.pre_ln = block.pre_ln
        self.ln_q = nn.LayerNorm(dim)
        self.ln_kv = nn.LayerNorm(dim) if block.pre_ln else nn.Identity()
        self.ln_mlp = nn.LayerNorm(dim)
        self.attn = MultiHeadAttention(dim, block.heads, block.attn_dropout)
        self.mlp = MLP(dim, block.mlp_mult, block.mlp_kind, block.dropout)
        self.dropout = nn.Dropout(block.dropout)

    def forward(self, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.pre_ln:
            h = x + self.dropout(self.attn(self.ln_q(x), self.ln_kv(y), mask))
            return h + self.dropout(self.mlp(self.ln_mlp(h)))
        h = self.ln_q(x + self.dropout(self.attn(x, y, mask)))
        return self.ln_mlp(h + self.dropout(self.mlp(h)))


class PMA(nn.Module):
    """Pooling by multihead attention: ``MAB(S, X, key_mask)`` with k = ``num_seeds`` learnable
    seed vectors S (xavier-uniform initialised) as the queries.

    Shapes:
        x: (B, L, dim); key_mask: (B, 1, L) True for real tokens -> (B, k, dim)
    """

    def __init__(self, dim: int, num_seeds: int, block: BlockConfig = BlockConfig()):
        super().__init__()
        self.seeds = nn.Parameter(torch.empty(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.seeds)
        self.mab = MAB(dim, block)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        seeds = self.seeds.expand(x.shape[0], -1, -1)
        return self.mab(seeds, x, key_mask)
