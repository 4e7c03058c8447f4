"""planner/display.py: every formatter against values worked by hand (GiB = 2^30 bytes)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from planner import display


@pytest.mark.parametrize("missing", [None, math.nan, float("nan"), pd.NA, pd.NaT])
def test_missing_values_read_na_everywhere(missing):
    assert display.is_missing(missing)
    for text in (
        display.number(missing),
        display.count(missing),
        display.gib(missing),
        display.ms(missing),
        display.percent(missing),
        display.rate(missing, "tok/s"),
        display.text(missing),
        display.cell(missing),
    ):
        assert text == "n/a"


@pytest.mark.parametrize("present", [0, 0.0, "", False, "x"])
def test_present_values_are_not_missing(present):
    assert not display.is_missing(present)


def test_gib_is_two_to_the_thirty_bytes():
    assert display.gib(2**30) == "1.00 GiB"
    # 16,060,522,496 B / 1,073,741,824 = 14.9575... (an 8B model's bf16 weights, 8.03e9 parameters × 2 bytes)
    assert display.gib(16_060_522_496) == "14.96 GiB"
    assert display.gib(3 * 2**29, 1, unit=False) == "1.5"
    assert display.gib(1500 * 2**30) == "1,500.00 GiB"


def test_ms_from_seconds():
    assert display.ms(0.0123) == "12.3 ms"
    assert display.ms(1.23456, 2) == "1,234.56 ms"
    assert display.ms(0.02, unit=False) == "20.0"


def test_percent_of_a_fraction():
    assert display.percent(0.95, 0) == "95%"
    assert display.percent(0.123) == "12.3%"
    assert display.percent(0.123, signed=True) == "+12.3%"
    assert display.percent(-0.042, signed=True) == "-4.2%"


def test_counts_numbers_and_rates_have_thousands_separators():
    assert display.count(131_072) == "131,072"
    assert display.count(24.0) == "24"
    assert display.number(1234.567) == "1,234.57"
    assert display.number(0.5, 0) == "0"  # round half to even, as format() does
    assert display.rate(2345.4, "tok/s") == "2,345 tok/s"
    assert display.rate(1.5, "req/s", 2) == "1.50 req/s"


def test_text_and_cells():
    assert display.text("vllm") == "vllm"
    assert display.text(0) == "0"
    assert display.text("") == "n/a"
    assert display.cell(True) == "yes" and display.cell(False) == "no"
    assert display.cell(1234.5) == "1,234.50"
    assert display.cell(1234.5, 1) == "1,234.5"
    assert display.cell(3) == 3  # an integer stays a number for the data grid
    assert display.cell("fits") == "fits"
