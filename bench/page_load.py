"""How long each page takes to show its answer in a real browser: ``python bench/page_load.py [-n 5]``.

Starts ``streamlit run app.py`` on a free port (file watcher off, usage statistics off), then opens every page
``n`` times, each in a fresh Chromium context (a new session, as a new visitor gets), at 1400 x 900, and times from
``page.goto`` until the page's answer is drawn:

* VRAM Budget: the verdict alert, the launch command and the memory chart;
* Concurrency vs Context: the chart;
* Live Compare and Load Test: the title and the endpoint area (no endpoint is configured here).

Prints the median and the slowest load per page, in seconds, and the median time to each thing waited for (where a
page waits for more than one, e.g. the verdict and then the chart); the target of issue 11 is a median under 2 s on
the 2-core development machine. Chromium is Debian's ``/usr/bin/chromium``, driven by Playwright.

On a shared machine other processes slow the loads down: the last line says how much CPU time processes outside this
benchmark (not the script, its server or its browser) used per load, read from ``/proc`` (Linux). Figures taken while
that is more than a few tenths of a second are not comparable with quiet ones.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
PLOTLY = ".js-plotly-plot .main-svg"
ALERT = '[data-testid="stAlert"]'
#: page path -> what must be visible once it has loaded, in the order it is waited for: (name, selector)
PAGES = {
    "": (("verdict", ALERT), ("launch command", '[data-testid="stCode"]'), ("chart", PLOTLY)),
    "concurrency": (("chart", PLOTLY),),
    "performance": (("chart", PLOTLY),),
    "compare": (("endpoint area", ALERT),),
    "loadtest": (("endpoint area", ALERT),),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cpu_by_process() -> dict[int, tuple[int, float]]:
    """``{pid: (parent pid, CPU seconds so far)}`` of every process, from ``/proc`` (empty where there is none)."""
    out: dict[int, tuple[int, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended meanwhile
        out[int(entry.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return out


def _others_cpu_s(before: dict[int, tuple[int, float]]) -> float:
    """CPU seconds used since ``before`` by processes outside this one's tree (its server and browser are inside)."""
    now = _cpu_by_process()
    ours, grew = {os.getpid()}, True
    while grew:
        children = {pid for pid, (parent, _) in now.items() if parent in ours} - ours
        ours |= children
        grew = bool(children)
    return sum(max(0.0, cpu - before.get(pid, (0, 0.0))[1]) for pid, (_, cpu) in now.items() if pid not in ours)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5, help="loads per page (default 5)")
    args = parser.parse_args()
    port = _free_port()
    empty = Path(tempfile.mkdtemp()) / "endpoints.toml"  # no endpoint: the pages' empty state
    env = {**os.environ, "LLM_PLANNER_ENDPOINTS": str(empty), "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"),
            *("--server.port", str(port), "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/_stcore/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        times: dict[str, list[list[float]]] = {path: [] for path in PAGES}  # per load: seconds to each selector
        others: list[float] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            for _ in range(args.n + 1):  # the first round warms the server's imports and caches: not counted
                for path, selectors in PAGES.items():
                    context = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = context.new_page()
                    before = _cpu_by_process()
                    t0 = time.perf_counter()
                    page.goto(f"{url}/{path}")
                    seen = []
                    for _, selector in selectors:
                        page.locator(selector).first.wait_for(timeout=60_000)
                        seen.append(time.perf_counter() - t0)
                    times[path].append(seen)
                    others.append(_others_cpu_s(before))
                    context.close()
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    print(f"{'page':24} {'median s':>9} {'slowest s':>10}   ({args.n} loads each, fresh sessions, 1400 x 900)")
    for path, values in times.items():
        counted = values[1:]
        line = f"{'/' + path:24} {statistics.median(v[-1] for v in counted):9.2f} {max(v[-1] for v in counted):10.2f}"
        names = [name for name, _ in PAGES[path]]
        if len(names) > 1:
            steps = (f"{name} {statistics.median(v[i] for v in counted):.2f}" for i, name in enumerate(names))
            line += "   (median s to the " + ", then the ".join(steps) + ")"
        print(line)
    counted = others[len(PAGES) :]  # the warm-up round is not counted
    print(f"CPU used by other processes per load: median {statistics.median(counted):.2f} s, most {max(counted):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
