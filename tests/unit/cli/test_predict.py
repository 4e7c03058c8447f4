"""``python -m planner predict`` and ``calibrate``: figures, files, and one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
DEPLOYMENT = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h200", "--max-model-len", "8192"]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_json_has_vllm_keys(capsys: pytest.CaptureFixture[str]) -> None:
    # tests/data/h200_llama-3.1-8b_vllm-0.24.0.md: concurrency 1, 529-token prompts, 128 output tokens: TPOT 4.80 ms
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


def test_predict_text_says_what_its_band_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predict", *DEPLOYMENT, "--max-concurrency", "1", "--num-prompts", "4"]) == 0
    out = capsys.readouterr().out
    assert "  (low–high): the predictor's error band for dense models at load c1, from its errors on models it " in out
    tpot = next(line for line in out.splitlines() if line.lstrip().startswith("TPOT"))
    assert tpot.count("–") == 2  # median and p99, each with its band


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
        (
            ["--calibration", "BIN"],
            "bin.json line 1: not valid JSON (Expecting value); expected a JSON calibration profile",
        ),
        (["--calibration", "DEEP"], "deep.json: nested too deeply to read; expected a JSON calibration profile"),
        (["--sweep", "100000"], "--sweep 100000 is not valid: expected an integer in [1, 4096]"),
        (["--num-prompts", "10000000"], "--num-prompts 10000000 is not valid: expected an integer from 1 to 100,000"),
        (["--goodput", "ttft=5"], "--goodput 'ttft=5' is not valid"),
        (["--calibration", "/nonexistent/p.json"], "--calibration '/nonexistent/p.json' is not valid"),
    ],
)
def test_predict_bad_input_is_one_line(tmp_path, capsys, argv: list[str], expected: str) -> None:
    binary = tmp_path / "bin.json"
    binary.write_bytes(bytes(range(256)) * 2)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)  # the new-user trial's file: json.loads raised RecursionError
    argv = [{"BIN": str(binary), "DEEP": str(deep)}.get(a, a) for a in argv]
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the new-user trial's files: the deep one was a 28-line RecursionError traceback, exit 1
        ("[" * 100_000 + "]" * 100_000, "runs.jsonl: nested too deeply to read; expected JSON or JSON Lines"),
        ("\n", "runs.jsonl line 1: not valid JSON (Expecting value); expected JSON or JSON Lines"),
    ],
)
def test_calibrate_unreadable_runs_file_is_one_line(tmp_path, capsys, text: str, expected: str) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("not json\n" if text == "\n" else text)
    assert main(["calibrate", str(path), "--out", str(tmp_path / "o.json"), *DEPLOYMENT]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err


EAGLE3_C16 = "bench/data/h200_sweeps/llama-3.1-8b-eagle3/in512_c16.json.gz"
LOAD = ["--input-len", "512", "--output-len", "128", "--max-concurrency", "16", "--num-prompts", "16"]
# vLLM's older spelling of the EAGLE-3 head (the scenario's flags read it too); the head as vLLM loaded it: 0.58 GiB
EAGLE3 = [
    "--spec-method",
    "eagle3",
    "--speculative-model",
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "--spec-head-gib",
    "0.58",
]


def test_predict_with_speculative_decoding(capsys: pytest.CaptureFixture[str]) -> None:
    rates = ["--spec-acceptance-rates", "0.8,0.75,0.75"]
    out = _json(capsys, "predict", *DEPLOYMENT, *LOAD, *EAGLE3, "--num-speculative-tokens", "3", *rates, "--json")
    assert out["planner_spec_acceptance_rates"] == [0.8, 0.75, 0.75]
    assert out["planner_spec_tokens_per_step"] == pytest.approx(2.85)  # 1 + 0.8 + 0.6 + 0.45
    # the H200 EAGLE-3 run at c=16 measured 2.84 ms TPOT against 5.30 ms without (bench/spec_prediction.py: -10%)
    assert out["planner_spec_tpot_ms"] == pytest.approx(2.84, rel=0.15)
    assert out["planner_spec_tpot_without_ms"] == pytest.approx(5.30, rel=0.1)
    # measured: it still paid at c=64 (7.33 ms against 9.05); None = it pays up to max_num_seqs
    assert out["planner_spec_break_even_batch"] is None or out["planner_spec_break_even_batch"] > 16
    # the workload simulated with it, prefill steps included (measured at c=16: 2.84 ms, simulator -7%)
    assert out["planner_spec_simulated"]["median_tpot_ms"] == pytest.approx(2.84, rel=0.15)


def test_predict_takes_the_rates_of_a_measured_run(capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM's result file has the acceptance length only, 2.865035 (1 + 2667 / 1430 drafts at k = 3):
    # one rate a with a + a² + a³ = 1.865035 -> a = 0.78047 (a² = 0.60914, a³ = 0.47542)
    measured = ["--spec-acceptance-from", EAGLE3_C16]
    out = _json(capsys, "predict", *DEPLOYMENT, *LOAD, *EAGLE3, "--num-speculative-tokens", "3", *measured, "--json")
    assert out["planner_spec_acceptance_rates"] == pytest.approx([0.78047] * 3, abs=1e-5)
    assert out["planner_spec_tokens_per_step"] == pytest.approx(2.865035, abs=1e-6)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--spec-method", "eagle3"], "--spec-method 'eagle3' is not valid: expected both --spec-method and"),
        (
            [*EAGLE3, "--num-speculative-tokens", "2", "--spec-acceptance-rates", "0.8,x"],
            "--spec-acceptance-rates '0.8,x' is not valid",
        ),
        (
            [*EAGLE3, "--num-speculative-tokens", "2", "--spec-acceptance-rates", "1.5"],
            "--spec-acceptance-rates (1.5,) is not valid",
        ),
        (
            [*EAGLE3, "--num-speculative-tokens", "2", "--spec-acceptance-from", "/nope.json"],
            "--spec-acceptance-from '/nope.json' is not valid",
        ),
    ],
)
def test_predict_bad_speculative_input_is_one_line(capsys, argv: list[str], expected: str) -> None:
    assert main(["predict", *DEPLOYMENT, *LOAD, *argv]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1


def test_the_headline_uses_the_given_acceptance_rates(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 24 item 6: the headline and the JSON keys were simulated at the method's default 80% whatever
    ``--spec-acceptance-rates`` said (2.80 ms at 0.3/0.2/0.1 as at 0.8); only the lines below took the rates."""
    k3 = ["--num-speculative-tokens", "3"]
    low = _json(capsys, "predict", *DEPLOYMENT, *LOAD, *EAGLE3, *k3, "--spec-acceptance-rates", "0.3,0.2,0.1", "--json")
    high = _json(capsys, "predict", *DEPLOYMENT, *LOAD, *EAGLE3, *k3, "--spec-acceptance-rates", "0.8", "--json")
    # by hand: 1 + 0.3 + 0.3·0.2 + 0.3·0.2·0.1 = 1.366 tokens a step; 1 + 0.8 + 0.64 + 0.512 = 2.952
    assert low["planner_spec_tokens_per_step"] == pytest.approx(1.366)
    assert high["planner_spec_tokens_per_step"] == pytest.approx(2.952)
    for out in (low, high):  # the headline is the run the lines below report, not a second one at other rates
        simulated = out["planner_spec_simulated"]
        for key in ("median_tpot_ms", "output_throughput", "median_ttft_ms"):
            assert out[key] == pytest.approx(simulated[key], rel=0.01), key
    # a step's cost does not depend on acceptance (k drafts and k + 1 verified tokens either way), so TPOT scales
    # with 1 / tokens per step: 2.952 / 1.366 = 2.16 (15%: the prefill steps between the decode steps are the same
    # at either rate and take ~1/8 of a request's span)
    assert low["median_tpot_ms"] / high["median_tpot_ms"] == pytest.approx(2.952 / 1.366, rel=0.15)
    assert any("acceptance rates 30%, 20%, 10%" in n for n in low["planner_notes"])


def test_the_readme_eagle3_example_needs_no_draft_model(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 24 item 7: ``predict ... --spec-method eagle3 --num-speculative-tokens 3`` ended in "--speculative-model
    is required": plan's older spelling of a draft model took ``--num-speculative-tokens`` for itself."""
    rates = ["--spec-acceptance-rates", "0.8,0.75,0.75"]
    out = _json(
        capsys, "predict", *DEPLOYMENT, "--spec-method", "eagle3", "--num-speculative-tokens", "3", *rates, "--json"
    )
    assert out["planner_spec_tokens_per_step"] == pytest.approx(2.85)  # 1 + 0.8 + 0.6 + 0.45


@pytest.mark.parametrize(
    "flags",
    [
        ["--static"],
        ["--prefix-cache-hit-rate", "0.5"],
        [*EAGLE3, "--num-speculative-tokens", "3"],
        ["--save-result", "x"],
    ],
)
def test_a_sweep_refuses_the_flags_it_would_ignore(capsys, flags: list[str]) -> None:
    assert main(["predict", *DEPLOYMENT, "--sweep", "2", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flags[0]} is not used by --sweep" in err


@pytest.mark.parametrize("name", ["runs.json", "in512_c1.json.gz"])
def test_a_results_file_given_as_a_profile_says_how_to_make_one(tmp_path, capsys, name: str) -> None:
    """Issue 24 item 12: a results file as ``--calibration`` was a pydantic dump ("gpu {'date': ... is not valid:
    expected Field required"); now one line naming the file, what it is, and the command that fits a profile."""
    path = tmp_path / name
    if name.endswith(".gz"):  # a real vllm bench serve result (bench/data/h200_sweeps), as the repository keeps it
        path.write_bytes((ROOT / "bench/data/h200_sweeps/llama-3.1-8b/in512_c1.json.gz").read_bytes())
    else:  # a result file this CLI writes
        assert main(["predict", *DEPLOYMENT, "--num-prompts", "4", "--save-result", str(path)]) == 0
    capsys.readouterr()
    assert main(["predict", *DEPLOYMENT, "--calibration", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Field required" not in err
    assert f"error: {path}: a results file (1 run(s) of vllm bench serve --save-result" in err
    assert (
        f"not a calibration profile; expected a profile: fit one on these runs with python -m planner calibrate {path}"
        in err
    )


def _cached_run(tmp_path, capsys, concurrency: int, hit_rate: float) -> str:
    """A result file of a deployment whose prefix cache served ``hit_rate`` of every prompt: the predicted run of
    that cache, with the server's counters a Load Test run records (``planner_prefix_cache_*``) at that rate."""
    path = tmp_path / f"cached_c{concurrency}.json"
    load = ["--input-len", "2048", "--output-len", "128", "--num-prompts", "16", "--max-concurrency", str(concurrency)]
    cache = ["--prefix-cache-hit-rate", str(hit_rate)]
    assert main(["predict", *DEPLOYMENT, *load, *cache, "--save-result", str(path)]) == 0
    capsys.readouterr()
    data = json.loads(path.read_text())
    queries = 16 * 2048
    data.update(
        planner_prefix_cache_queries=queries,
        planner_prefix_cache_hits=hit_rate * queries,
        planner_prefix_cache_source="vllm:prefix_cache_queries/hits",
    )
    path.write_text(json.dumps(data))
    return str(path)


def test_calibrate_refuses_runs_answered_from_the_prefix_cache(tmp_path, capsys) -> None:
    """Issue 24 item 8: runs with 98.5% prefix-cache hits were fitted as if every prompt token had been prefilled,
    without a word, and the profile then predicted TTFT far too low (here 116 ms against the defaults' 356 ms for
    the same uncached load). Now such a run is refused in one line naming it and its hit rate."""
    runs = [_cached_run(tmp_path, capsys, c, 0.985) for c in (1, 16)]
    out = tmp_path / "profile.json"
    assert main(["calibrate", *runs, "--out", str(out), *DEPLOYMENT]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not out.exists()
    assert "error: cached_c1.json: predicted · Llama-3.1-8B-Instruct · c=1: 98.5% of its prompt tokens came" in err
    assert "from the prefix cache (vllm:prefix_cache_queries/hits)" in err and "at most 10%" in err


def test_calibrate_takes_runs_with_a_few_cache_hits(tmp_path, capsys) -> None:
    # 5%: about the chat template's shared first block of 16 tokens on ~300-token prompts
    runs = [_cached_run(tmp_path, capsys, c, 0.05) for c in (1, 4)]
    assert main(["calibrate", *runs, "--out", str(tmp_path / "profile.json"), *DEPLOYMENT]) == 0
    assert "fit error" in capsys.readouterr().out
