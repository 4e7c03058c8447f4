"""A plan's verdict in one line, at the level a page shows it: fits, a warning, does not fit, refused.

A plan "fits" when the engine starts and serves one request of ``max_model_len``. The verdict is a warning rather than
a plain "fits" when that start depends on something the plan does not know or cannot serve: vLLM with no version set
where some versions in use would not start it (:attr:`planner.capacity.result.Plan.version_range`), or a target context
beyond the model's own limit (``max_position_embeddings``), which no engine serves without overriding it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from planner.capacity.explain import max_model_len_text
from planner.capacity.result import Plan

__all__ = ["Verdict", "verdict"]


@dataclass(frozen=True)
class Verdict:
    """One plan's verdict.

    Attributes:
        level: ``fits``, ``warning`` (fits only in some vLLM versions, or not at the target context), ``no_fit`` or
            ``refused``.
        text: the line to show, e.g. "Fits — vLLM 0.28 (V1)".
        detail: why not, or why only in part (``None`` when it fits).
    """

    level: Literal["fits", "warning", "no_fit", "refused"]
    text: str
    detail: str | None = None


def verdict(plan: Plan) -> Verdict:
    """The verdict of ``plan``; a ``--max-model-len auto`` plan names the length it resolved to ("Fits — vLLM 0.28
    (V1) at max_model_len 35,360 (auto)").

    Args:
        plan: a plan.

    Returns:
        The verdict; a warning names the vLLM versions that would not start it, or the model's limit the target
        context passes.
    """
    at = f" at max_model_len {max_model_len_text(plan)}" if plan.max_model_len_auto else ""
    if plan.refused:
        return Verdict("refused", f"Refused: {plan.reason}", plan.reason)
    if not plan.fits:
        return Verdict("no_fit", f"Does not fit{at}: {plan.reason}", plan.reason)
    warnings = []
    vr = plan.version_range
    if vr is not None and vr.refused_by:
        refuse, starts = ", ".join(vr.refused_by), ", ".join(vr.starts_in)
        warnings.append(f"vLLM {refuse} would not start it (it starts in {starts}); set the version you run")
    target, limit = plan.scenario.target_context, plan.model_max_position_embeddings
    if target and limit is not None and target > limit:
        warnings.append(f"not at the target context {target:,}: beyond the model's limit of {limit:,} tokens")
    if warnings:
        detail = "; ".join(warnings)
        return Verdict("warning", f"Fits only in part — {plan.engine_label}{at}: {detail}", detail)
    return Verdict("fits", f"Fits — {plan.engine_label}{at}")
