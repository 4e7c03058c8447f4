"""Hostile command lines, property-based (issue 24): every subcommand of ``python -m planner`` with its flags taken
from the parser itself (:func:`planner.cli.main.build_parser`), so a new flag is attacked without editing this file.

Each case is one ``main(argv)`` call in-process: a subcommand, its required arguments, and up to five of its flags,
each given a valid value, a near-valid one (``1e3`` for an integer, ``8192.5``, `` 8192 ``), a wrong type, NaN/inf,
a huge or negative number, unicode, markup, a damaged JSON/TOML/result file, or a path that does not exist. Nothing
leaves the process: the calls that would reach a server (``compare``'s run, ``bench``'s jobs and searches, Ray,
``demo-server``'s listening socket) are replaced by a stop that counts the command line as accepted; and the
predictor's workload sizes are kept small where they are valid, since its run time grows with them (that is a
benchmark figure, not a property).

Properties: ``main`` returns 0, 1 or 2 (argparse's own refusals exit 2) and never raises anything else; a refusal
(exit 2) prints exactly one ``error:`` line, naming a flag or a value it was given, and no traceback; ``plan
--json`` holds every flag it echoes as given, or a note or warning names it (no value changed without a message).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.capacity.kv_cache import KV_CACHE_DTYPES
from planner.cli.main import build_parser, main
from tests.hostile import (
    COUNTS,
    NASTY_NUMBERS,
    assert_one_line,
    hostile_settings,
    hostile_text,
    json_documents,
    json_values,
    mostly,
)

ROOT = Path(__file__).resolve().parents[3]
#: Generated command lines per subcommand (``size`` plans a search per accepted line: fewer of them).
EXAMPLES = {
    "plan": 400,
    "predict": 250,
    "size": 80,
    "gpus": 20,
    "models": 20,
    "model": 80,
    "calibrate": 100,
    "compare": 200,
    "bench": 300,
    "demo-server": 100,
    "fleet": 120,
    "deploy": 120,
}

_SUB = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
PARSERS: dict[str, argparse.ArgumentParser] = dict(_SUB.choices)


class Reached(BaseException):
    """Raised where a command would leave the process (a server, Ray): the command line was accepted."""


@pytest.fixture
def offline_commands(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Stops at every boundary that would leave the process; files the flags may name, in a temporary folder."""

    def stop(*args: Any, **kwargs: Any) -> None:
        raise Reached

    import planner.cli.demo
    import planner.cli.max_rate
    import planner.compare.run
    import planner.loadtest.ray_workers
    import planner.loadtest.worker

    monkeypatch.setattr(planner.compare.run, "run_compare", stop)
    monkeypatch.setattr(planner.loadtest.worker, "plan_jobs", stop)
    monkeypatch.setattr(planner.cli.max_rate, "search", stop)
    monkeypatch.setattr(planner.loadtest.ray_workers, "import_ray", stop)
    monkeypatch.setattr(planner.cli.demo, "serve", stop)
    folder = tmp_path_factory.mktemp("hostile_cli")
    seed = gzip.decompress((ROOT / "bench/data/h200_sweeps/llama-3.1-8b-spec/in512_c1.json.gz").read_bytes())
    (folder / "run.json").write_bytes(seed)
    (folder / "damaged.json").write_bytes(seed[: len(seed) // 2])
    (folder / "prompts.jsonl").write_text('{"prompt": "Hi"}\n{"prompt": "Bye"}\n', encoding="utf-8")
    (folder / "trace.jsonl").write_text('{"timestamp": 0, "input_length": 8, "output_length": 4}\n', encoding="utf-8")
    (folder / "endpoints.toml").write_text(
        '[[endpoint]]\nname = "a"\nkind = "vllm"\nbase_url = "http://127.0.0.1:9"\n', encoding="utf-8"
    )
    (folder / "nested.json").write_text("[" * 100_000, encoding="utf-8")
    (folder / "binary.bin").write_bytes(b"\xff\xfe\x00\x01" * 64)
    return folder


# --- values -----------------------------------------------------------------------------------------------------------
_MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "Qwen/Qwen2.5-7B-Instruct")
_GPUS = ("h100-sxm-80gb", "l4", "H100 80GB", "rtx-4090", "a100-sxm4-80gb", "custom")
_FILES = ("run.json", "damaged.json", "prompts.jsonl", "trace.jsonl", "endpoints.toml", "nested.json", "binary.bin")
_PATHS = st.one_of(st.sampled_from(_FILES), st.just("missing/nothing.json"), st.just("."))
#: Workload sizes kept small when valid: the predictor simulates every request (10,000 prompts take seconds).
_SMALL = {
    "num_prompts": 64,
    "input_len": 4096,
    "output_len": 256,
    "sweep": 16,
    "sweep_max": 16,
    "max_concurrency": 64,
    "replicas": 16,
    "hpa_max_replicas": 64,
}
_HOSTILE_NUMBERS = st.one_of(
    st.sampled_from(NASTY_NUMBERS), st.integers(-(10**20), -1).map(str), st.sampled_from(["1e400", "-0.0", "nan"])
)
_TEXT = {
    "model": st.sampled_from(_MODELS),
    "model_id": st.sampled_from(_MODELS),
    "speculative_model": st.sampled_from(("meta-llama/Llama-3.2-1B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")),
    "gpu": st.sampled_from(_GPUS),
    "kv_cache_dtype": st.sampled_from(KV_CACHE_DTYPES),
    "max_model_len": st.sampled_from(("auto", "-1", "8192", "4096", "1e3", "8192.0")),
    "speculative_config": st.sampled_from(
        (
            '{"method": "ngram", "num_speculative_tokens": 3}',
            '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}',
        )
    ),
    "engine_version": st.sampled_from(("0.24.0", "0.10.0", "0.9.0")),
    "compare_engine_version": st.sampled_from(("0.24.0", "0.9.0")),
    "endpoint": st.sampled_from(("a=vllm:http://127.0.0.1:9", "vllm:http://127.0.0.1:9/v1", "b=tgi:http://h:1")),
    "slo": st.sampled_from(("ttft_p99_ms=1000", "tpot_p99_ms=50", "e2el_p90_ms=8000")),
    "goodput": st.sampled_from(("ttft:500", "tpot:50", "e2el:2000")),
    "gpus": st.sampled_from(("l4", "h100-sxm-80gb", "h100-sxm-80gb:8")),
    "price": st.sampled_from(("l4=0.8", "h100-sxm-80gb=2.49")),
    "quantization": st.sampled_from(("none,fp8", "none", "fp8,awq")),
    "spec_acceptance_rates": st.sampled_from(("0.8,0.6,0.4", "0.3", "0.9,0.8")),
    "prompt": st.sampled_from(("Hello", "Explain KV caches.")),
    "system": st.sampled_from(("be brief",)),
    "host": st.sampled_from(("127.0.0.1",)),
}
#: Valid values of numeric flags where the parser's type alone would mostly give refused ones.
_NUMBERS = {
    "tensor_parallel_size": st.sampled_from(("1", "2", "4", "8")),
    "pipeline_parallel_size": st.sampled_from(("1", "2")),
    "block_size": st.sampled_from(("16", "32", "64")),
    "max_num_seqs": st.integers(1, 1024).map(str),
    "max_num_batched_tokens": st.integers(512, 32768).map(str),
    "target_context": st.integers(1, 131072).map(str),
    "num_speculative_tokens": st.integers(1, 8).map(str),
    "speculate": st.integers(1, 8).map(str),
    "gpu_memory_utilization": st.sampled_from(("0.9", "0.5", "0.95", "1")),
    "cuda_memory_fraction": st.sampled_from(("1", "0.9")),
    "custom_gpu_memory_gib": st.sampled_from(("80", "24", "141.5")),
    "kv_compression_ratio": st.sampled_from(("1", "2", "8", "64")),
    "shared_prefix_ratio": st.sampled_from(("0", "0.5", "0.99")),
    "max_gpus": st.sampled_from(("1", "2")),
    "port": st.sampled_from(("0", "8000")),
}
_FILE_DESTS = {
    "calibration",
    "dataset_path",
    "endpoints_file",
    "spec_acceptance_from",
    "save_result",
    "out",
    "runs",
}


def _valid(action: argparse.Action, command: str) -> st.SearchStrategy[str]:
    dest = action.dest
    if action.choices is not None:
        return st.sampled_from([str(c) for c in action.choices])
    if dest in _FILE_DESTS:
        return _PATHS
    if dest in _TEXT:
        return _TEXT[dest]
    if dest in _NUMBERS:
        return _NUMBERS[dest]
    if action.type is int:
        small = ("predict", "size", "calibrate", "fleet")
        high = _SMALL.get(dest, 4096) if command in small else _SMALL.get(dest, 100_000)
        return st.integers(0, high).map(str)
    if action.type is float:
        return st.one_of(st.floats(0, 10).map(repr), st.sampled_from(("0.5", "1", "0.9", "inf")))
    return hostile_text()


def _hostile(action: argparse.Action, command: str) -> st.SearchStrategy[str]:
    if action.type in (int, float) and command in ("predict", "size", "fleet") and action.dest in _SMALL:
        return _HOSTILE_NUMBERS  # no large valid sizes: the predictor would run for seconds (see the docstring)
    return st.one_of(
        hostile_text(),
        _HOSTILE_NUMBERS,
        st.integers(-(10**30), 10**30).map(str),
        json_documents(json_values(4)).filter(lambda t: len(t) < 2000),
    )


def _value(action: argparse.Action, command: str) -> st.SearchStrategy[str]:
    return mostly(_valid(action, command), _hostile(action, command), one_in=5)


def _flags_of(command: str) -> list[argparse.Action]:
    return [a for a in PARSERS[command]._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


#: Flags a subcommand needs in practice (not required by argparse: the command says it is missing), given nine
#: times in ten, so most command lines get past them to the values under test.
_USUAL = {
    "plan": ("--model", "--gpu"),
    "predict": ("--model", "--gpu"),
    "calibrate": ("--model", "--gpu"),
    "compare": ("--endpoint",),
    "size": ("--gpus",),
    "demo-server": (),
    "fleet": ("--model", "--gpu"),
    "deploy": ("--model", "--gpu"),
}


def _action(command: str, flag: str) -> argparse.Action:
    return next(a for a in _flags_of(command) if flag in a.option_strings)


@st.composite
def command_lines(draw: st.DrawFn, command: str) -> list[str]:
    argv = [command]
    parser = PARSERS[command]
    for flag in _USUAL.get(command, ()):
        if draw(st.integers(0, 9)):
            argv += [flag, draw(_value(_action(command, flag), command))]
    for action in parser._actions:  # positionals and required flags first
        if isinstance(action, argparse._HelpAction):
            continue
        if not action.option_strings:
            count = 1 if action.nargs in (None, 1) else draw(st.integers(1, 2))
            usual = st.just("run.json") if action.dest == "runs" else _value(action, command)
            argv += [draw(mostly(usual, _value(action, command))) for _ in range(count)]
        elif action.required:
            argv += [action.option_strings[0], draw(_value(action, command))]
    for action in draw(st.lists(st.sampled_from(_flags_of(command)), max_size=4, unique_by=lambda a: a.dest)):
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            argv.append(flag)
        elif action.nargs == "+":
            argv += [flag, *draw(st.lists(_value(action, command), min_size=1, max_size=3))]
        else:
            argv += [flag, draw(_value(action, command))]
    if command == "plan" and draw(st.booleans()):
        argv.append("--json")
    return argv


# --- the properties ---------------------------------------------------------------------------------------------------
_ERROR = re.compile(r"^python -m planner[\w -]*: error: ")
#: ``plan --json`` fields that echo a flag (the flag's dest is the field's name).
_ECHOED = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "block_size",
    "target_context",
    "kv_compression_ratio",
)


def _given(argv: list[str]) -> dict[str, str]:
    """Flag dest → the last value given, for the flags of ``argv`` that take one value."""
    actions = {s: a for a in _flags_of(argv[0]) for s in a.option_strings}
    out: dict[str, str] = {}
    for i, word in enumerate(argv[:-1]):
        action = actions.get(word)
        if action is not None and action.nargs is None:
            out[action.dest] = argv[i + 1]
    return out


def _run(argv: list[str], cwd: Path) -> tuple[int | str, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str = main(argv)
        except SystemExit as exc:  # argparse's own refusal (usage error): exit 2
            code = exc.code if isinstance(exc.code, int) else 2
        except Reached:
            code = "reached"
    return code, out.getvalue(), err.getvalue()


def _check(argv: list[str], cwd: Path) -> None:
    tally = COUNTS[f"cli.{argv[0]}"]
    tally.cases += 1
    try:
        code, out, err = _run(argv, cwd)
    except Exception:
        tally.crashes += 1
        raise
    assert "Traceback" not in out + err, err[-2000:]
    assert code in (0, 1, 2, "reached"), (code, err[-500:])
    if code == 2:
        tally.refused += 1
        errors = [line for line in err.splitlines() if _ERROR.match(line)]
        assert len(errors) == 1, f"{len(errors)} error lines for {argv}: {err[-1000:]}"
        # the line names a flag of the command (one given, or a required one missing) or a value it was given
        actions = PARSERS[argv[0]]._actions
        flags = [s for a in actions for s in (*a.option_strings, a.dest, a.metavar) if s and s != "help"]
        words = [w[:20] for w in argv[1:] if w.strip()] + [repr(w)[:20] for w in argv[1:]]
        assert_one_line(errors[0].split(": error: ", 1)[1], [*flags, *words])
        tally.one_line += 1
    elif code == 0 and argv[0] == "plan" and "--json" in argv:
        _check_echo(argv, out, err)


def _check_echo(argv: list[str], out: str, err: str) -> None:
    data = json.loads(out)
    said = "\n".join([err, json.dumps(data.get("notes")), str(data.get("launch_warning")), str(data.get("reason"))])
    for dest, text in _given(argv).items():
        if dest not in _ECHOED or (dest == "max_model_len" and text.strip().lower() in ("auto", "-1")):
            continue
        value = data.get(dest)
        assert (value is not None and float(value) == float(text)) or dest in said or dest.replace("_", "-") in said, (
            f"{dest}={text!r} became {value!r} with no message: {argv}"
        )


@pytest.mark.parametrize("command", list(EXAMPLES))
def test_command_line_runs_or_is_refused_in_one_line(command: str, offline_commands: Path) -> None:
    assert set(EXAMPLES) == set(PARSERS), "a subcommand without hostile cases"

    @hostile_settings(EXAMPLES[command])
    @given(argv=command_lines(command))
    def check(argv: list[str]) -> None:
        _check(argv, offline_commands)

    check()
