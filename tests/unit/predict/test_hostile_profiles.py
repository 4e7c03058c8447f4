"""Hostile calibration profiles, property-based (issue 24): the file ``python -m planner calibrate --out`` writes and
the Performance and Sizing pages (and ``predict``/``size --calibration``) read back.

Each case is a valid profile with up to three fields changed (coefficients to NaN, ±inf, negative, huge or
out-of-range values, strings; unknown keys; wrong types), whole or damaged (truncated, nested thousands deep, not
JSON, a result file instead of a profile). Properties: nothing raises but the package's own errors, a refusal is one
line naming the file, an accepted profile holds the coefficients as written and writes back (``to_json``) to the same
profile.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import asdict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from planner.predict.calibration import CalibrationProfile, load_profile
from planner.predict.step_time import DEFAULT_COEFFICIENTS
from tests.hostile import floats_any, hostile_settings, hostile_text, json_documents, json_values, outcome

#: Generated profiles.
EXAMPLES = 500
NAME = "profile.json"

_VALID = json.loads(
    CalibrationProfile(
        gpu="h200-sxm-141gb",
        engine="vllm",
        engine_version="0.24.0",
        models=("meta-llama/Llama-3.1-8B-Instruct",),
        coefficients=DEFAULT_COEFFICIENTS,
        fit_error={"median_tpot": 0.03, "median_ttft": None},
        runs=({"label": "c16", "max_concurrency": 16},),
        created="2026-12-01T10:00:00Z",
    ).to_json()
)
_COEFFICIENTS = sorted(asdict(DEFAULT_COEFFICIENTS))
_ANY = st.one_of(json_values(), floats_any(), st.integers(-(2**70), 2**70), hostile_text())


@st.composite
def profiles(draw: st.DrawFn) -> tuple[str, dict[str, Any] | None]:
    """``(file text, the profile it holds)``; the profile is None when the text is damaged."""
    doc = copy.deepcopy(_VALID)
    for _ in range(draw(st.integers(0, 3))):
        roll = draw(st.integers(0, 5))
        if roll <= 2 and isinstance(doc.get("coefficients"), dict):  # a coefficient
            doc["coefficients"][draw(st.sampled_from([*_COEFFICIENTS, "bogus_s"]))] = draw(
                st.one_of(floats_any(), st.floats(0, 3), st.integers(-5, 5), _ANY)
            )
        elif roll == 3:
            doc.pop(draw(st.sampled_from(sorted(doc))), None)
        else:
            doc[draw(st.sampled_from([*sorted(doc), "extra"]))] = draw(_ANY)
    if draw(st.integers(0, 5)) == 0:
        return draw(json_documents(st.just(doc))), None
    return json.dumps(doc, allow_nan=True), doc


@hostile_settings(EXAMPLES)
@given(case=profiles())
def test_profile_is_read_as_written_or_refused_in_one_line(case) -> None:
    text, doc = case
    profile, refusal = outcome("files.profiles", lambda: load_profile(text, name=NAME), names=[NAME])
    if doc == _VALID:
        assert profile is not None, f"the profile calibrate writes was refused: {refusal}"
    if profile is None:
        return
    if doc is not None:
        for name, value in doc["coefficients"].items():  # accepted: the coefficients were an object
            held = getattr(profile.coefficients, name)
            written = float(value)  # "8192.5" or an integer: the same number, as a float
            assert math.isfinite(held) and held == written, f"coefficients.{name}={value!r} was read as {held!r}"
    again, _ = outcome("files.profiles", lambda: load_profile(profile.to_json(), name=NAME), case=False)
    assert again == profile, "a profile that was read does not write back the same"
