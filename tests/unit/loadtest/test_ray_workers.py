"""The Ray workers' split of a run (pure) and the ``--workers`` flag where Ray is missing; runs on a local Ray are in
``tests/integration/test_ray_workers.py``."""

from __future__ import annotations

import pytest

from planner.cli.main import main
from planner.errors import InvalidParameterError
from planner.loadtest.ray_workers import INSTALL_HINT, RAY_VERSION, split_threads
from planner.loadtest.settings import LoadSettings


@pytest.mark.parametrize(
    ("workers", "cap", "caps", "shares"),
    [
        # cap 4 over 2 workers: 2 + 2; groups 0..5 to (j mod 4) mod 2 = 0,1,0,1,0,1
        (2, 4, [2, 2], [[0, 2, 4], [1, 3, 5]]),
        # cap 5 over 2: 3 + 2; (j mod 5) mod 2 = 0,1,0,1,0 | 0 -> worker 0 owns 3 of every 5 slots
        (2, 5, [3, 2], [[0, 2, 4, 5], [1, 3]]),
        # cap 3 over 4 workers: only 3 workers, one slot each
        (4, 3, [1, 1, 1], [[0, 3], [1, 4], [2, 5]]),
        # no cap: round-robin, no caps
        (4, None, [None] * 4, [[0, 4], [1, 5], [2], [3]]),
    ],
)
def test_the_cap_is_split_so_it_sums_to_the_runs_and_groups_follow_the_slots(workers, cap, caps, shares):
    threads = [[j] for j in range(6)]
    split = split_threads(threads, workers, cap)
    assert [c for c, _ in split] == caps
    assert [[g[0] for g in share] for _, share in split] == shares
    if cap is not None:
        assert sum(c for c, _ in split) == cap


def test_a_conversation_stays_on_one_worker_and_more_workers_than_requests_are_not_started():
    threads = [[0, 2, 4], [1, 3, 5]]  # two conversations of three turns
    split = split_threads(threads, 8, None)
    assert [share for _, share in split] == [[[0, 2, 4]], [[1, 3, 5]]]


@pytest.mark.parametrize("bad", [0, -1, 257, True, 2.0])
def test_num_workers_outside_1_to_256_is_refused(bad):
    with pytest.raises(InvalidParameterError, match="num_workers"):
        LoadSettings(num_workers=bad)


def test_workers_without_ray_say_how_to_install_it_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # `import ray` raises ImportError
    assert main(["bench", "--endpoint", "vllm:http://127.0.0.1:1", "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert err == f"python -m planner bench: error: {INSTALL_HINT}\n"
    assert "pip install -r requirements-ray.txt" in err and f"ray=={RAY_VERSION}" in err


def test_the_pinned_ray_is_the_one_in_the_requirements():
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    for name in ("requirements-ray.txt", "requirements-dev.txt"):
        assert f"ray=={RAY_VERSION}" in (root / name).read_text(encoding="utf-8").split()
