"""``python -m planner predict`` and ``calibrate``: figures, files, and one-line errors for bad input."""

from __future__ import annotations

import json

import pytest

from planner.cli.main import main

DEPLOYMENT = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h200", "--max-model-len", "8192"]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_json_has_vllm_keys(capsys: pytest.CaptureFixture[str]) -> None:
    # shared/device/vllm/README.md §4: concurrency 1, 529-token prompts, 128 output tokens: TPOT 4.80 ms
    out = _json(
        capsys, "predict", *DEPLOYMENT, "--input-len", "529", "--max-concurrency", "1", "--num-prompts", "4", "--json"
    )
    for key in (
        "median_ttft_ms",
        "median_tpot_ms",
        "median_itl_ms",
        "p99_ttft_ms",
        "p99_tpot_ms",
        "request_throughput",
        "output_throughput",
        "planner_preemptions",
    ):
        assert key in out
    assert out["median_tpot_ms"] == pytest.approx(4.80, rel=0.03)
    assert out["completed"] == 4
    assert out["total_output_tokens"] == 4 * 128


def test_predict_sweep_and_save(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, "predict", *DEPLOYMENT, "--sweep", "4", "--json")
    assert [lvl["max_concurrency"] for lvl in out["levels"]] == [1, 2, 4]
    path = tmp_path / "p.json"
    assert (
        main(["predict", *DEPLOYMENT, "--max-concurrency", "2", "--num-prompts", "4", "--save-result", str(path)]) == 0
    )
    assert json.loads(path.read_text())["max_concurrency"] == 2


def test_calibrate_round_trip(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = []
    for c in (1, 4):
        path = tmp_path / f"c{c}.json"
        assert (
            main(
                ["predict", *DEPLOYMENT, "--max-concurrency", str(c), "--num-prompts", "8", "--save-result", str(path)]
            )
            == 0
        )
        runs.append(str(path))
    capsys.readouterr()
    profile = tmp_path / "profile.json"
    assert main(["calibrate", *runs, "--out", str(profile), *DEPLOYMENT]) == 0
    assert "fit error" in capsys.readouterr().out
    data = json.loads(profile.read_text())
    assert data["gpu"] == "h200-sxm-141gb"
    assert len(data["runs"]) == 2
    out = _json(capsys, "predict", *DEPLOYMENT, "--calibration", str(profile), "--num-prompts", "4", "--json")
    assert out["planner_calibration"].startswith("calibrated on 2 run(s)")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--calibration", "BIN"], "is not valid: expected a JSON calibration profile"),
        (["--sweep", "100000"], "--sweep 100000 is not valid: expected an integer in [1, 4096]"),
        (["--num-prompts", "10000000"], "--num-prompts 10000000 is not valid: expected an integer from 1 to 100,000"),
        (["--goodput", "ttft=5"], "--goodput 'ttft=5' is not valid"),
        (["--calibration", "/nonexistent/p.json"], "--calibration '/nonexistent/p.json' is not valid"),
    ],
)
def test_predict_bad_input_is_one_line(tmp_path, capsys, argv: list[str], expected: str) -> None:
    binary = tmp_path / "bin.json"
    binary.write_bytes(bytes(range(256)) * 2)
    argv = [str(binary) if a == "BIN" else a for a in argv]
    assert main(["predict", *DEPLOYMENT, *argv]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert err.count("\n") == 1


def test_calibrate_names_the_file_not_a_flag(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notresult_c1.json"
    path.write_text(json.dumps({"hello": 1}))
    assert main(["calibrate", str(path), "--out", str(tmp_path / "o.json"), *DEPLOYMENT]) == 2
    err = capsys.readouterr().err
    assert f"error: {path} result 1" in err
    assert "--" + str(path) not in err
