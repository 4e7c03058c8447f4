"""The floors of ``planner/`` (docs/architecture.md): every import between its packages points down, none loops.

Each module under ``planner/`` is parsed with :mod:`ast` (nothing is imported or run), and every ``import`` and
``from ... import`` in it — at the top, inside a function or under ``TYPE_CHECKING`` — becomes an arrow from its
package (``planner/<package>/`` or the ground-floor module ``planner/<name>.py``) to the package it names. A package
may import only packages on floors below its own; two packages on one floor never import each other. The table below
is the one in docs/architecture.md; a new package must be given a floor here and there.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLANNER = ROOT / "planner"

#: Package (a folder under planner/, or a module planner/<name>.py) → its floor; 1 is the ground.
FLOORS = {
    "errors": 1,
    "palette": 1,
    "units": 1,
    "values": 2,
    "parsing": 2,
    "display": 2,
    "figure_svg": 2,
    "table_html": 3,
    "fields": 3,
    "serving": 3,
    "catalog": 3,
    "demo": 3,
    "capacity": 4,
    "metrics": 4,
    "loadtest": 5,
    "compare": 5,
    "deploy": 5,
    "predict": 6,
    "fleet": 7,
    "sizing": 8,
    "links": 9,
    "cli": 9,
    "views": 10,
    "__main__": 10,
}


def _package(parts: tuple[str, ...]) -> str | None:
    """The package of a dotted name's parts starting ``planner`` (None for ``planner`` itself)."""
    return parts[1] if len(parts) > 1 and parts[0] == "planner" else None


def _imported(path: Path) -> set[str]:
    """Dotted names of the ``planner`` modules (or names) that the module at ``path`` imports."""
    module = path.relative_to(ROOT).with_suffix("").parts
    here = module[:-1] if module[-1] == "__init__" else module
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package that holds this module, up level - 1 folders
                base = here[: len(here) - node.level + (1 if module[-1] == "__init__" else 0)]
                stem = ".".join((*base, *([node.module] if node.module else [])))
            else:
                stem = node.module or ""
            # ``from planner import fields`` names the package ``fields``; ``from planner.x import y`` names x.
            if stem == "planner":
                names.update(f"planner.{alias.name}" for alias in node.names)
            else:
                names.add(stem)
    return {name for name in names if name.split(".")[0] == "planner"}


def _arrows() -> dict[str, dict[str, set[str]]]:
    """Package → imported package → the files (relative paths) whose imports draw that arrow."""
    arrows: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in sorted(PLANNER.rglob("*.py")):
        source = _package(path.relative_to(ROOT).with_suffix("").parts)
        if source is None:  # planner/__init__.py: the package's face, importing nothing
            continue
        for name in _imported(path):
            target = _package(tuple(name.split(".")))
            if target is not None and target != source:
                arrows[source][target].add(str(path.relative_to(ROOT)))
    return arrows


ARROWS = _arrows()


def test_every_package_has_a_floor():
    packages = {p.stem for p in PLANNER.glob("*.py") if p.name != "__init__.py"}
    packages |= {p.name for p in PLANNER.iterdir() if (p / "__init__.py").is_file()}
    missing = sorted(packages - set(FLOORS))
    assert not missing, f"give these a floor in FLOORS and docs/architecture.md: {missing}"


@pytest.mark.parametrize("source", sorted(FLOORS))
def test_imports_point_down(source: str):
    up = {
        target: sorted(files)
        for target, files in ARROWS.get(source, {}).items()
        if FLOORS.get(target, 0) >= FLOORS[source]
    }
    assert not up, f"planner/{source} (floor {FLOORS[source]}) imports a package on its floor or above: {up}"


def test_no_cycle_between_packages():
    """Depth-first search over the package arrows; a grey node met again closes a loop."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "grey"
        path.append(node)
        for target in sorted(ARROWS.get(node, {})):
            if state.get(target) == "grey":
                return [*path[path.index(target) :], target]
            if target not in state and (loop := visit(target)) is not None:
                return loop
        state[node] = "black"
        path.pop()
        return None

    for node in sorted(ARROWS):
        if node not in state and (loop := visit(node)) is not None:
            pytest.fail("import cycle between packages: " + " -> ".join(loop))


def test_the_check_sees_arrows():
    """The parse finds what the code holds: cli imports capacity, views imports links (else every check is void)."""
    assert "capacity" in ARROWS["cli"]
    assert "links" in ARROWS["views"]
    assert "errors" in ARROWS["values"]
