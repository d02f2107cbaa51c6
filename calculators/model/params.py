"""Parameter counts of a model, by line, from its tensor inventory.

Unique parameters: a tied embedding is one tensor and counts once (the lm_head
line is 0). `active` follows Mixtral's and Qwen's model cards: every parameter a
token's forward pass reads, embeddings included, with only `experts_per_token`
of the routed experts. DeepSeek's papers quote activated parameters without the
input embedding; that is `active - embedding`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from calculators.model.spec import ModelSpec
from calculators.model.tensors import Category, Tensor, model_tensors

# The breakdown lines are the tensor categories; MTP modules are reported apart.
LINES = tuple(c for c in get_args(Category) if c != "mtp")


@dataclass(frozen=True, kw_only=True)
class ParameterCounts:
    """Parameter counts (elements, not bytes) of the main model, with MTP apart.

    total:          unique parameters of the main model (without MTP modules).
    active:         parameters one token reads (routed experts: top-k only).
    non_embedding:  total minus token and position embeddings and lm_head
                    (Kaplan et al. 2020, arXiv:2001.08361, section 2.1; Qwen model cards).
    by_line:        total per breakdown line (see LINES).
    mtp:            multi-token-prediction modules, reported separately.
    """

    total: int
    active: int
    non_embedding: int
    by_line: dict[str, int]
    mtp: int

    @property
    def embedding(self) -> int:
        """Token embedding plus learned position embedding."""
        return self.by_line["embedding"] + self.by_line["position_embedding"]

    @property
    def active_non_embedding(self) -> int:
        """Active parameters less embeddings and lm_head."""
        return self.active - self.embedding - self.by_line["lm_head"]

    @property
    def total_with_mtp(self) -> int:
        """All stored parameters: main model plus MTP modules."""
        return self.total + self.mtp


def counts_of(tensors: tuple[Tensor, ...]) -> ParameterCounts:
    """Sum a tensor inventory into the breakdown lines."""
    by_line = dict.fromkeys(LINES, 0)
    active = mtp = 0
    for t in tensors:
        if t.mtp:
            mtp += t.parameters
            continue
        by_line[t.category] += t.parameters
        active += t.active_parameters
    total = sum(by_line.values())
    embeddings = by_line["embedding"] + by_line["position_embedding"] + by_line["lm_head"]
    return ParameterCounts(
        total=total, active=active, non_embedding=total - embeddings, by_line=by_line, mtp=mtp
    )


def parameter_counts(spec: ModelSpec) -> ParameterCounts:
    """Parameter breakdown of `spec`: per line, total, active per token, non-embedding.

    Exact for the families in `calculators.model.families` (tests pin published counts);
    equal by construction to sum(p.numel() for p in model.parameters()) of the
    probes' reference decoder built from the same spec.
    """
    return counts_of(model_tensors(spec))
