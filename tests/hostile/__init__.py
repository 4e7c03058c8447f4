"""Shared pieces of the hostile-input suites (issue 24): strategies, the one-line rule, and the case count.

The suites (``tests/unit/*/test_hostile_*.py`` and ``tests/pages/test_hostile_params.py``) feed generated input to the
parsers and codecs every user-facing boundary goes through: link query strings, CLI flags, a pasted or uploaded
``config.json``, uploaded result files, calibration profiles, datasets and traces, endpoints files. Each case is
classified by :func:`outcome`:

* **accepted**: the boundary returned a value (each suite then checks that nothing it was given changed without a
  message, and that what it writes back reads back the same);
* **refused**: it raised the package's own error (:class:`planner.errors.PlannerError`), whose message must be one
  line (:func:`assert_one_line`) naming the input;
* **crash**: anything else; the suite fails with it.

Every case is counted in :data:`COUNTS` (per suite: cases, refused, refused with one line, crashes); pytest prints the
totals at the end of a run (``tests/conftest.py``) and ``bench/hostile_inputs.py`` runs the same suites and prints
them. The settings are derandomized (:func:`hostile_settings`), so the same cases run on every machine and the count
quoted in the notes is exact.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from planner.errors import PlannerError

__all__ = [
    "COUNTS",
    "Tally",
    "assert_one_line",
    "floats_any",
    "hostile_settings",
    "hostile_text",
    "json_documents",
    "json_values",
    "mostly",
    "number_texts",
    "outcome",
    "summary",
]

T = TypeVar("T")

#: Longest message a refusal may print (a one-line message quotes at most a short echo of the value).
MAX_MESSAGE_CHARS = 600
#: Signs of a message that is not one clear line: a traceback, a pydantic error dump, a Python object repr.
_NOT_ONE_LINE = re.compile(r"Traceback \(most recent|validation errors? for |\[type=[a-z_]+|<[a-zA-Z_.]+ object at 0x")


@dataclass
class Tally:
    """What one suite's cases gave."""

    cases: int = 0
    refused: int = 0
    one_line: int = 0
    crashes: int = 0


#: Suite name → its tally, for the whole process (pytest session or the bench script).
COUNTS: dict[str, Tally] = defaultdict(Tally)


def hostile_settings(max_examples: int) -> settings:
    """Hypothesis settings of every hostile suite: a fixed number of derandomized examples, no deadline (a 2-core CI
    machine under load is slow, not wrong), no example database (the same cases every run) and no shrinking phase
    beyond what finds the smallest failing input."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
    )


def assert_one_line(message: str, names: Iterable[str] = ()) -> None:
    """A refusal's message: one line, short, no traceback or pydantic dump, naming one of ``names`` when given.

    Raises:
        AssertionError: the message breaks one of these rules.
    """
    assert message.strip(), "an empty message"
    assert "\n" not in message.strip(), f"more than one line: {message[:400]!r}"
    assert len(message) <= MAX_MESSAGE_CHARS, f"{len(message)} characters: {message[:200]!r}..."
    assert not _NOT_ONE_LINE.search(message), f"not a clear line: {message[:400]!r}"
    wanted = [n for n in names if n]
    if wanted:
        assert any(n in message for n in wanted), f"none of {wanted[:4]} named in {message[:400]!r}"


def outcome(
    suite: str, call: Callable[[], T], *, names: Iterable[str] = (), case: bool = True
) -> tuple[T | None, str | None]:
    """Run ``call`` as one case of ``suite``: ``(value, None)`` when accepted, ``(None, message)`` when refused.

    A refusal (:class:`PlannerError`) must be one line naming one of ``names`` (:func:`assert_one_line`); any other
    exception is counted as a crash and re-raised. ``case=False`` is a later step of a case already counted (planning
    a config that was read): its crashes count, the case does not count again.
    """
    tally = COUNTS[suite]
    tally.cases += case
    try:
        value = call()
    except PlannerError as exc:
        tally.refused += case
        assert_one_line(str(exc), names)
        tally.one_line += case
        return None, str(exc)
    except Exception:
        tally.crashes += 1
        raise
    return value, None


def summary() -> str:
    """One line per suite and a total: cases, the share of refusals answered with one line, crashes."""
    lines = []
    total = Tally()
    for name, t in sorted(COUNTS.items()):
        share = f"{t.one_line / t.refused:.1%}" if t.refused else "n/a"
        lines.append(
            f"  {name:<26} {t.cases:>6,} cases, {t.refused:>6,} refused ({share} in one line), {t.crashes} crashes"
        )
        total.cases += t.cases
        total.refused += t.refused
        total.one_line += t.one_line
        total.crashes += t.crashes
    share = f"{total.one_line / total.refused:.1%}" if total.refused else "n/a"
    head = f"hostile inputs: {total.cases:,} generated cases, {total.refused:,} refused ({share} in one line), " + (
        f"{total.crashes} crashes"
    )
    return "\n".join([head, *lines])


# --- strategies ------------------------------------------------------------------------------------------------------
#: Text that hurts parsers: control characters, RTL override, zero-width, emoji, markup, paths, URLs, templates.
NASTY_TEXT = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\u202e1tpircs",
    "8\u200b",
    "🙂",
    "Ω≈ç√",
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "'; DROP TABLE x;--",
    "{{7*7}}",
    "${HOME}",
    "http://169.254.169.254/latest/meta-data/",
    "file:///etc/passwd",
    "\r\n",
    "\t",
    "null",
    "None",
    "true",
    "[]",
    "{}",
)
#: Numbers as text that no bounded numeric parameter should take, and near-valid spellings.
NASTY_NUMBERS = (
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1e308",
    "1e999",
    "-1",
    "0",
    "-0",
    "0.0",
    "1e3",
    "1E3",
    "1_000",
    "0x10",
    "١٢٨",
    " 8192 ",
    "8192.0",
    "8192.5",
    "+5",
    ".5",
    "5.",
    "1e-320",
    "9" * 400,
    "2**31",
    "1,000",
)


def hostile_text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Any unicode text, short, mixed with :data:`NASTY_TEXT` and :data:`NASTY_NUMBERS`."""
    return st.one_of(
        st.sampled_from(NASTY_TEXT),
        st.sampled_from(NASTY_NUMBERS),
        st.text(max_size=max_size),
    )


def mostly(good: st.SearchStrategy[T], bad: st.SearchStrategy[Any], *, one_in: int = 4) -> st.SearchStrategy[Any]:
    """``bad`` one time in ``one_in``, else ``good`` (``st.one_of`` flattens nested choices, so a ``bad`` made of many
    branches would otherwise win most draws)."""
    return st.integers(1, one_in).flatmap(lambda i: bad if i == 1 else good)


def floats_any() -> st.SearchStrategy[float]:
    """Every float, NaN and infinities included, weighted towards the edges."""
    return st.one_of(
        st.sampled_from((math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, 0.5, 1.5)),
        st.floats(allow_nan=True, allow_infinity=True),
    )


def number_texts(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    """Numbers as text: ``valid`` values written plainly, and :data:`NASTY_NUMBERS`, integers and floats of any size."""
    return st.one_of(
        valid.map(str),
        st.sampled_from(NASTY_NUMBERS),
        st.integers(min_value=-(10**20), max_value=10**20).map(str),
        floats_any().map(repr),
    )


def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """JSON-shaped values of every type: scalars (huge, negative, NaN/inf floats, unicode), lists and objects."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        floats_any(),
        hostile_text(),
    )
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(hostile_text(12), children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def _truncate(text: str, cut: float) -> str:
    return text[: int(len(text) * cut)]


def json_documents(documents: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    """Text of a file built from ``documents`` (JSON-able values), whole or damaged: truncated, deeply nested, NaN
    written as JSON does not allow, a byte-order mark, or not JSON at all."""
    dumped = documents.map(lambda d: json.dumps(d, allow_nan=True))
    return st.one_of(
        dumped,
        dumped,
        st.tuples(dumped, st.floats(0.0, 0.99)).map(lambda p: _truncate(*p)),
        st.integers(1, 100_000).map(lambda n: "[" * n + "]" * (n % 3)),
        st.integers(1, 100_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
        dumped.map(lambda t: "\ufeff" + t),
        hostile_text(),
    )
