"""``python -m planner bench``: flags and dataset lines refused in one line with exit 2, before any request is sent.

Runs against the timed server are in tests/integration/cli/test_bench.py.
"""

from __future__ import annotations

import pytest

from planner.cli.main import main


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["--endpoint", "vllm:http://127.0.0.1:1", "--concurrency", "0"],
            "--max-concurrency/--concurrency 0 is not valid: expected an integer ≥ 1",
        ),
        (
            ["--endpoint", "vllm:http://127.0.0.1:1", "--max-concurrency", "0"],
            "--max-concurrency/--concurrency 0 is not",
        ),
        (["--endpoint", "nope"], "--endpoint 'nope' is not valid"),  # what was typed, not the name added to it
        (["--endpoint", "vllm:http://127.0.0.1:1", "--goodput", "ttft"], "--goodput 'ttft' is not valid"),
        (
            ["--endpoint", "vllm:http://127.0.0.1:1", "--goodput", "foo:10"],
            "--goodput 'foo:10' is not valid: expected ttft, tpot or e2el with a limit in ms > 0",
        ),
        (["--endpoint", "vllm:http://127.0.0.1:1", "--goodput", "ttft:-5"], "--goodput 'ttft:-5' is not valid"),
        (
            ["--endpoint", "vllm:http://127.0.0.1:1", "--duration", "0"],
            "--duration 0.0 is not valid: expected seconds > 0, or leave it out for no cap",
        ),
    ],
)
def test_bench_bad_flag_is_one_line_exit_2(argv, fragment, capsys):
    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m planner bench: error: ") and fragment in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--sweep", "0"], "--sweep 0 is not valid"),
        (
            ["--sweep", "4", "--concurrency", "2"],
            "--max-concurrency/--concurrency 2 is not valid: expected no --max-concurrency/--concurrency with",
        ),
        (["--dataset-path", "/nonexistent/p.jsonl"], "--dataset-path '/nonexistent/p.jsonl' is not valid"),
    ],
)
def test_bench_new_flags_bad_values(argv, fragment, capsys):
    assert main(["bench", "--endpoint", "vllm:http://127.0.0.1:1", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m planner bench: error: ") and fragment in err and err.count("\n") == 1


def test_bad_dataset_line_is_one_line_naming_it(tmp_path, capsys):
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text('{"prompt": "fine"}\n{"question": "no prompt key"}\n')
    assert main(["bench", "--endpoint", "vllm:http://127.0.0.1:1", "--dataset-path", str(dataset)]) == 2
    err = capsys.readouterr().err
    assert f"--dataset-path {dataset} line 2: " in err and '"prompt" (vLLM custom dataset)' in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{oops", "not valid JSON (Expecting property name enclosed in double quotes)"),
        ("[" * 5000 + "]" * 5000, "nested too deeply to read"),
    ],
)
def test_dataset_line_that_is_not_json_is_one_line(tmp_path, capsys, line, problem):
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text('{"prompt": "fine"}\n' + line + "\n")
    assert main(["bench", "--endpoint", "vllm:http://127.0.0.1:1", "--dataset-path", str(dataset)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m planner bench: error: ")
    assert f"--dataset-path {dataset} line 2: {problem}; expected " in err and err.count("\n") == 1
