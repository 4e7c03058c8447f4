"""The exception tree: every error class of ``planner`` is defined in ``planner/errors.py`` and is a PlannerError."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import planner
from planner import errors

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
