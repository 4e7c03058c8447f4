"""A number typed in the browser is taken exactly or refused in one line (issue 24, item 9).

``st.number_input`` parsed the text in the browser (JavaScript ``parseInt``): ``1e3`` typed into the target context
became 1, and the link said ``target_context=1``. The boxes are now text read by the link's own parser
(``pages/_numbers.py``).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

pytestmark = pytest.mark.e2e

LABEL = "Target context (tokens)"


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


def test_exponent_is_taken_exactly_and_a_huge_number_is_refused_in_one_line(open_page):
    st = open_page()
    box = st.page.get_by_test_id("stMain").locator(f"input[aria-label='{LABEL}']").first
    st.number(LABEL, "1e3")
    assert box.input_value() == "1000"  # the box shows what the link carries
    assert _query(st.page.url)["target_context"] == ["1000"]
    assert "Concurrency @ 1,000" in st.text()
    st.number(LABEL, "1e30")
    assert box.input_value() == "1e30"  # kept as typed
    assert _query(st.page.url)["target_context"] == ["1000"]  # not changed
    # each line's text after its icon (a material-symbol ligature, "error", in the same element)
    errors = [t.split("\n")[-1] for t in st.page.get_by_test_id("stAlertContentError").all_inner_texts()]
    assert errors == [
        f"{LABEL}: '1e30' is not used: expected an integer from 1 to 10485760, or empty; still using 1000."
    ]
    st.assert_no_exception()
    st.screenshot("numbers-refused")
