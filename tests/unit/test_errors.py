"""The exception tree: every error class of ``planner`` is defined in ``planner/errors.py`` and is a PlannerError;
one-line messages naming the value and what is accepted."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import planner
from planner import errors
from planner.errors import (
    InvalidParameterError,
    MalformedTextError,
    PlannerError,
    RayUnavailableError,
    UnknownGPUError,
    UnknownModelError,
    UnsupportedModelError,
    shown,
)

_PACKAGE = Path(planner.__file__).parent


def test_every_exception_class_is_a_planner_error_in_errors_py():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, BaseException)]
    assert {c.__name__ for c in classes} >= {"BadValue", "HubError", "EndpointConfigError", "IdleTimeoutError"}
    assert all(issubclass(c, errors.PlannerError) for c in classes)


def test_no_module_but_errors_py_defines_an_exception_class():
    # a class whose base's name ends in Error or Exception is an error class; they all belong in planner/errors.py
    defined = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == _PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                if any(b.endswith(("Error", "Exception")) for b in bases):
                    defined.append(f"{path.relative_to(_PACKAGE)}:{node.name}")
    assert defined == []


def test_invalid_parameter_names_the_value_and_what_is_accepted() -> None:
    err = InvalidParameterError("max_model_len", -5, "a positive number of tokens")
    assert str(err) == "max_model_len=-5 is not valid: expected a positive number of tokens"
    assert (err.name, err.value, err.accepted) == ("max_model_len", -5, "a positive number of tokens")
    assert isinstance(err, PlannerError) and isinstance(err, ValueError)


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_value_is_called_empty(blank: str) -> None:
    assert str(InvalidParameterError("model", blank, "a model id")) == "model is empty: expected a model id"


def test_a_long_value_is_cut_to_80_characters() -> None:
    value = "x" * 2000
    assert shown(value) == "'" + "x" * 76 + "..."  # repr's quote + 76 characters + "..." = 80
    assert len(shown(value)) == 80
    assert shown("short") == "'short'"
    message = str(InvalidParameterError("gpu", value, "a GPU id"))
    assert message == f"gpu={shown(value)} is not valid: expected a GPU id" and "\n" not in message


def test_malformed_text_names_the_input_and_the_problem() -> None:
    err = MalformedTextError("bad_runs.jsonl line 1", "not valid JSON (Expecting value)", "JSON or JSON Lines")
    assert str(err) == "bad_runs.jsonl line 1: not valid JSON (Expecting value); expected JSON or JSON Lines"
    assert (err.name, err.value) == ("bad_runs.jsonl line 1", "not valid JSON (Expecting value)")
    assert isinstance(err, InvalidParameterError)  # caught wherever a bad parameter is


@pytest.mark.parametrize(
    ("cls", "also"),
    [
        (RayUnavailableError, Exception),
        (UnknownGPUError, LookupError),
        (UnknownModelError, LookupError),
        (UnsupportedModelError, ValueError),
    ],
)
def test_every_error_is_a_planner_error(cls: type[Exception], also: type[Exception]) -> None:
    err = cls("one line")
    assert isinstance(err, PlannerError) and isinstance(err, also) and str(err) == "one line"
