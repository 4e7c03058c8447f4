"""How many hostile inputs the suites try and how they are answered: ``python bench/hostile_inputs.py [--no-pages]``.

Runs the hostile-input suites in this process (the same derandomized strategies as the test run, :mod:`tests.hostile`):
link query strings of every page's codec, CLI command lines of every subcommand, pasted ``config.json`` files, Load
Test uploads (result files, prompt JSONL, ShareGPT, traces), calibration profiles, ``endpoints.toml`` files and
``--endpoint`` flags, and (unless ``--no-pages``) a few link query strings per page through Streamlit's AppTest.

Prints one line per suite and a total: generated cases, how many were refused and the share of refusals answered with
one clear line (:func:`tests.hostile.assert_one_line`: one line, short, no traceback or pydantic dump, naming the
input), and crashes (an exception other than the package's own errors). A crash or a broken property also fails its
test: pytest's report above the counts names the input that did it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUITES = (
    "tests/unit/links/test_hostile_links.py",
    "tests/unit/cli/test_hostile_flags.py",
    "tests/unit/catalog/test_hostile_configs.py",
    "tests/unit/loadtest/test_hostile_files.py",
    "tests/unit/predict/test_hostile_profiles.py",
    "tests/unit/serving/test_hostile_endpoints.py",
)
PAGES = "tests/pages/test_hostile_params.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-pages", action="store_true", help="leave out the AppTest runs (about 30 s)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    files = [*SUITES, *(() if args.no_pages else (PAGES,))]
    code = pytest.main([*(str(ROOT / f) for f in files), "-q", "-p", "no:cacheprovider", "--no-header"])
    elapsed = time.perf_counter() - started
    from tests.hostile import summary

    print(summary())
    print(f"wall time: {elapsed:.1f} s; pytest exit code {int(code)}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
