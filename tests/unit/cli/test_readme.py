"""Every ``bash`` example of the README that runs offline, run as written (issue 24 item 7: three failed when copied).

The README's code blocks are parsed (continuation lines joined, comments dropped), each ``python -m planner ...``
command is run in-process through :func:`planner.cli.main.main` in a folder holding the files the examples name, and
must exit 0. ``...`` is what the README says it stands for; ``[--flag value]`` (an optional part) is run with the
option. Commands that need a live server are skipped by subcommand, listed below with the tests that run them
against a local one; commands that are not the planner's are listed too, so a new example is either run or named.
"""

from __future__ import annotations

import gzip
import re
import shlex
from pathlib import Path

import pytest

from planner.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
#: The files the examples name, as the measured runs they stand for (vLLM 0.24.0 on one H200, ``vllm bench serve
#: --save-result``; bench/data/h200_sweeps/README.md): Llama-3.1-8B at 512 in / 128 out, and with the Llama-3.2-1B
#: draft (k = 5) for ``--spec-acceptance-from``.
FILES = {
    "run_c1.json": "bench/data/h200_sweeps/llama-3.1-8b/in512_c1.json.gz",
    "run_c16.json": "bench/data/h200_sweeps/llama-3.1-8b/in512_c16.json.gz",
    "run_c64.json": "bench/data/h200_sweeps/llama-3.1-8b/in512_c64.json.gz",
    "run.json": "bench/data/h200_sweeps/llama-3.1-8b-spec/in512_c1.json.gz",
}
#: Subcommands whose examples need a live server (or serve until Ctrl-C), and where they are tested against one.
NEEDS_A_SERVER = {
    "bench": "tests/integration/cli/test_bench.py (the tests' timed server)",
    "compare": "tests/integration/test_compare_endpoints_file.py (the README's endpoints file)",
    "demo-server": "tests/integration/test_demo_server.py and tests/integration/cli/test_demo.py",
}
#: Examples that are not planner commands: install, start the app, run the tests, a benchmark script.
NOT_THE_PLANNER = ("pip install ", 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install ', "python bench/")
#: The README's one definition of ``...`` in its examples.
ELLIPSIS = re.compile(r"^# below, \.\.\. = the deployment flags: (.+)$", re.MULTILINE)


def _commands() -> list[str]:
    """Each command line of the README's ``bash`` blocks, continuation lines joined, in order."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        out += [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return out


def _argv(command: str, ellipsis: list[str]) -> list[str]:
    """The planner's argv of one example: ``...`` expanded, the brackets of optional parts removed."""
    words = shlex.split(command, comments=True)[3:]  # after "python -m planner"
    argv: list[str] = []
    for word in words:
        argv += ellipsis if word == "..." else [word.removeprefix("[").removesuffix("]")]
    return argv


def test_every_offline_example_of_the_readme_runs(tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    (definition,) = ELLIPSIS.findall(README.read_text(encoding="utf-8"))
    ellipsis = shlex.split(definition)
    for name, source in FILES.items():
        (tmp_path / name).write_bytes(gzip.decompress((ROOT / source).read_bytes()))
    monkeypatch.chdir(tmp_path)
    ran, skipped, failures = [], set(), []
    for command in _commands():
        if not command.startswith("python -m planner "):
            assert command.startswith(NOT_THE_PLANNER), f"a README example that is neither run nor listed: {command}"
            continue
        argv = _argv(command, ellipsis)
        if argv[0] in NEEDS_A_SERVER:
            skipped.add(argv[0])
            continue
        code = main(argv)
        err = capsys.readouterr().err
        ran.append(argv[0])
        if code != 0:
            failures.append(f"{command}\n  -> exit {code}: {err.strip()}")
    assert not failures, "\n".join(failures)
    assert skipped == set(NEEDS_A_SERVER)  # each skipped subcommand still has an example
    # the examples run: 2 plan, 6 predict (4 with ...), 1 calibrate, 2 size, 1 fleet, 2 deploy
    assert sorted(ran) == sorted(
        ["plan"] * 2 + ["predict"] * 6 + ["calibrate"] + ["size"] * 2 + ["fleet"] + ["deploy"] * 2
    )
    assert (tmp_path / "deploy-k8s" / "vllm.yaml").exists() and (tmp_path / "deploy-stack" / "values.yaml").exists()
    assert (tmp_path / "h200-profile.json").exists()  # calibrate's profile, which the next example predicts with
