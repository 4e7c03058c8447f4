"""``python -m planner calibrate``: fit the step-time coefficients to measured runs and write a profile.

The runs are two of vLLM 0.24.0's own result files (``vllm bench serve --save-result``) for Llama-3.1-8B on one H200,
bench/data/h200_sweeps/llama-3.1-8b/in2048_c{4,16}.json.gz (2,048 tokens in, 128 out, concurrency 4 and 16). The
"measured" figures the command prints are those files' own: median TPOT 5.197 and 7.910 ms, median TTFT 191.05 and
509.3 ms, output throughput 600.4 and 1,343 tok/s.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.predict.calibration import load_profile

SWEEPS = Path(__file__).resolve().parents[3] / "bench" / "data" / "h200_sweeps" / "llama-3.1-8b"
DEPLOYMENT = [
    *("--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h200", "--engine-version", "0.24.0"),
    *("--max-model-len", "8192", "--max-num-seqs", "256", "--max-num-batched-tokens", "8192"),
]


@pytest.fixture
def runs(tmp_path: Path) -> list[str]:
    paths = []
    for c in (4, 16):
        path = tmp_path / f"c{c}.json"
        path.write_bytes(gzip.decompress((SWEEPS / f"in2048_c{c}.json.gz").read_bytes()))
        paths.append(str(path))
    return paths


def test_fit_prints_each_run_and_writes_a_profile(runs: list[str], tmp_path: Path, capsys) -> None:
    out = tmp_path / "h200.json"
    assert main(["calibrate", *runs, "--out", str(out), *DEPLOYMENT]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "median TPOT / median TTFT / output throughput, predicted (error against measured)"
    assert lines[1].startswith("c4.json: llama-3.1-8b · ")
    assert lines[2] == "    measured   5.20 ms / 191.0 ms / 600 tok/s"
    assert lines[5].startswith("c16.json: ") and lines[6] == "    measured   7.91 ms / 509.3 ms / 1,343 tok/s"
    assert lines[-1] == f"wrote {out}"
    assert lines[-2].startswith("fit error (median |error| over 2 run(s)): median tpot ")
    # the calibrated row predicts every measured figure within 10 % (the fit's own errors, printed in brackets)
    for row in (lines[4], lines[8]):
        errors = [int(e) for e in re.findall(r"\(([+-]\d+)%\)", row)]
        assert len(errors) == 3 and all(abs(e) <= 10 for e in errors), row
    profile = load_profile(out.read_bytes(), name=str(out))
    assert (profile.gpu, profile.engine_version, profile.models) == (
        "h200-sxm-141gb",
        "0.24.0",
        ("meta-llama/Llama-3.1-8B-Instruct",),
    )


def test_a_missing_run_file_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nope.json"
    assert main(["calibrate", str(missing), "--out", str(tmp_path / "p.json"), *DEPLOYMENT]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"python -m planner calibrate: error: --runs {str(missing)!r} is not valid: expected a readable result file "
        "(No such file or directory)\n"
    )
    assert err.count("\n") == 1 and not (tmp_path / "p.json").exists()


def test_a_file_that_is_not_a_result_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["calibrate", str(bad), "--out", str(tmp_path / "p.json"), *DEPLOYMENT]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m planner calibrate: error: ") and "bad.json" in err and err.count("\n") == 1


def test_an_unwritable_profile_is_one_line_exit_2(runs: list[str], tmp_path: Path, capsys) -> None:
    out = tmp_path / "no-such-dir" / "p.json"
    assert main(["calibrate", *runs, "--out", str(out), *DEPLOYMENT]) == 2
    err = capsys.readouterr().err
    assert err == f"python -m planner calibrate: error: --out {out}: No such file or directory\n"
