"""planner/table_html.py: a table as plain HTML, every cell escaped, missing values as "n/a", numbers right-aligned.
Expected strings are written by hand from the function's contract."""

from __future__ import annotations

import re

import pandas as pd

from planner.table_html import table_html


def _cells(markup: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag} [^>]*>(.*?)</{tag}>", markup)


def _aligns(markup: str, tag: str) -> list[str]:
    return re.findall(rf'<{tag} style="[^"]*text-align:(\w+)', markup)


def test_headline_columns_in_their_order_and_rows_in_frame_order():
    frame = pd.DataFrame({"rank": ["1", "2"], "GPU": ["H100", "A100"], "why": ["the cheapest", "costs more"]})
    markup = table_html(frame, ["why", "rank", "not a column"])
    assert _cells(markup, "th") == ["why", "rank"]
    assert _cells(markup, "td") == ["the cheapest", "1", "costs more", "2"]


def test_every_cell_and_header_is_escaped():
    frame = pd.DataFrame({"<b>col</b>": ["<script>alert(1)</script>", "a & b"]})
    markup = table_html(frame)
    assert "<script>" not in markup and "<b>" not in markup
    assert _cells(markup, "th") == ["&lt;b&gt;col&lt;/b&gt;"]
    assert _cells(markup, "td") == ["&lt;script&gt;alert(1)&lt;/script&gt;", "a &amp; b"]


def test_missing_values_read_n_a():
    frame = pd.DataFrame({"price": [1.5, None], "name": ["x", None]}, dtype=object)
    frame.loc[1, "price"] = float("nan")
    assert _cells(table_html(frame), "td") == ["1.5", "x", "n/a", "n/a"]


def test_columns_of_numbers_are_right_aligned_and_text_left():
    frame = pd.DataFrame(
        {"$/hour": ["2.98", "n/a", "≥ 5.96"], "p99 (ms)": ["285", "1,024", "16.2"], "GPU": ["H100", "A100", "L4"]}
    )
    markup = table_html(frame)
    # "≥ 5.96" does not read as a number, so "$/hour" is text; every "p99 (ms)" cell does
    assert _aligns(markup, "th") == ["left", "right", "left"]
    assert _aligns(markup, "td")[:3] == ["left", "right", "left"]


def test_box_height_and_column_widths():
    frame = pd.DataFrame({"why": ["a sentence"], "rank": ["1"]})
    markup = table_html(frame, max_height_px=300, widths_px={"why": 280})
    assert markup.startswith('<div style="max-height:300px;overflow:auto;')
    assert "min-width:280px" in re.findall(r"<th [^>]*>why</th>", markup)[0]
    assert "min-width" not in re.findall(r"<th [^>]*>rank</th>", markup)[0]


def test_an_empty_frame_is_a_header_without_rows():
    markup = table_html(pd.DataFrame({"rank": []}))
    assert _cells(markup, "th") == ["rank"] and _cells(markup, "td") == []
