"""How long each page takes to show its answer in a real browser: ``python bench/page_load.py [-n 5]``.

Starts ``streamlit run app.py`` on a free port (file watcher off, usage statistics off), then opens every page
``n`` times, each in a fresh Chromium context (a new session, as a new visitor gets), at 1400 x 900, and times from
``page.goto`` until the page's answer is drawn:

* VRAM Budget: the verdict alert and the memory chart;
* Concurrency vs Context: the chart;
* Live Compare and Load Test: the title and the endpoint area (no endpoint is configured here).

Prints the median and the slowest load per page, in seconds; the target of issue 11 is a median under 2 s on the
2-core development machine. Chromium is Debian's ``/usr/bin/chromium``, driven by Playwright.
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
#: page path -> what must be visible once it has loaded
PAGES = {
    "": ('[data-testid="stAlert"]', PLOTLY),
    "concurrency": (PLOTLY,),
    "performance": (PLOTLY,),
    "compare": ('[data-testid="stAlert"]',),
    "loadtest": ('[data-testid="stAlert"]',),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
        times: dict[str, list[float]] = {path: [] for path in PAGES}
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            for _ in range(args.n + 1):  # the first round warms the server's imports and caches: not counted
                for path, selectors in PAGES.items():
                    context = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = context.new_page()
                    t0 = time.perf_counter()
                    page.goto(f"{url}/{path}")
                    for selector in selectors:
                        page.locator(selector).first.wait_for(timeout=60_000)
                    times[path].append(time.perf_counter() - t0)
                    context.close()
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    print(f"{'page':24} {'median s':>9} {'slowest s':>10}   ({args.n} loads each, fresh sessions, 1400 x 900)")
    for path, values in times.items():
        counted = values[1:]
        print(f"{'/' + path:24} {statistics.median(counted):9.2f} {max(counted):10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
