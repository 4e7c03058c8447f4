"""run_compare and the compare CLI refuse bad input before any request is sent.

Runs against the timed server are in tests/integration/compare/test_run.py.
"""

from __future__ import annotations

import asyncio

import pytest

from planner.cli.main import main
from planner.compare.run import run_compare
from planner.errors import InvalidParameterError
from planner.serving.endpoints import Endpoint
from planner.serving.requests import ChatRequest


def test_run_compare_validates():
    with pytest.raises(InvalidParameterError, match="repeat"):
        asyncio.run(run_compare([Endpoint("a", "vllm", "http://x:1")], ChatRequest("x"), repeat=0))
    with pytest.raises(InvalidParameterError, match="unique names"):
        asyncio.run(run_compare([Endpoint("a", "vllm", "http://x:1")] * 2, ChatRequest("x")))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint", "a=nope:http://x:1", "--prompt", "x"], "--endpoint 'a=nope:http://x:1' is not valid"),
        (["--prompt", "x"], "give at least one --endpoint"),
        (["--endpoint", "a=vllm:http://x:1", "--prompt", "x", "--max-tokens", "0"], "--max-tokens 0 is not valid"),
    ],
)
def test_cli_compare_bad_input_exits_2_with_one_line(args, message, capsys):
    assert main(["compare", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("python -m planner compare: error:")
