"""How soon each page answers in a real browser, and how soon a run starts after its click:
``python bench/page_load.py [-n 5] [--against OTHER_CHECKOUT] [--fresh-context]``.

Starts ``streamlit run app.py`` on a free port (file watcher off, usage statistics off) and the project's demo server
(``python -m planner demo-server``: 150 ms to the first token, 20 ms a token), named ``demo`` in the app's endpoints
file. Then, in one warm Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright) at 1400 x 900:

* **Pages**: each page is opened ``n`` times, each time in a fresh tab (a new Streamlit session) of the same browser
  context, so the browser's HTTP and code caches are warm as in a browser already used for the app
  (``--fresh-context`` opens each load in a new context instead: a first visit, nothing cached). Two times are read
  off the page's own clock (``performance.now()``, from the navigation's start):

  - **first answer**: the page's answer is drawn: VRAM Budget's verdict, Concurrency vs Context's chart,
    Performance's headline figures, Sizing's verdict; Live Compare's and Load Test's endpoint picker;
  - **complete first screen**: the last change to anything inside the 1400 x 900 viewport (a mutation observer,
    the header's running indicator and attribute changes that draw nothing left out: ``data-test*``, ``aria-*``, an
    attribute set to the value it had),
    once the script run is over, no element is loading its code (Streamlit's skeleton) and the viewport has not
    changed for a second. What is drawn below the fold later does not count.

* **Runs**: Live Compare and Load Test are opened with the demo endpoint chosen (Load Test: 16 requests, 4 at a
  time, one word a token), the page is left idle for 2 s (a person reads before clicking), then Run is clicked.
  Read from the demo server's record of what it received (``GET /_recorded``, its wall clock, this machine's):

  - **click → first request**: the first request of the run (any: discovery, tokenizer, warm-up or measured; the
    run's own are those within a second before its first generation, which leaves out a finished run's last
    ``/metrics`` scrape and the page's discovery);
  - **click → first generation**: the first chat/completions request;
  - **first token → first live figure**: from the demo server's first token (the first generation request's arrival
    + its 150 ms to the first token) to the first live figure on the page (Live Compare: the endpoint's token count,
    "streaming · 3 tokens"; Load Test: the live chart, which counts the requests in flight from the start, so this
    can be negative).

Every figure is printed with the 1-minute load average (``os.getloadavg``) beside it: the median over its loads. On a
shared 2-core machine a load average above ~2 means other work had the cores, and the figures are upper bounds.

``--against PATH`` measures a second checkout (e.g. ``git worktree add /tmp/base main``) in the same minutes: the two
apps' loads alternate, page by page, so both see the same load. The first round of each page warms the server's
imports and caches and is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
VIEWPORT = {"width": 1400, "height": 900}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: page path -> selector of its answer (first answer = the first time it is in the document)
PAGES = {
    "": '[data-testid="stMain"] [data-testid="stAlert"]',
    "concurrency": ".st-key-concurrency_chart svg, .st-key-concurrency_chart-static svg",
    "performance": '[data-testid="stMain"] [data-testid="stMetric"]',
    "sizing": '[data-testid="stMain"] [data-testid="stAlert"]',
    "compare": '[data-testid="stMain"] [data-testid="stMultiSelect"]',
    "loadtest": '[data-testid="stMain"] [data-testid="stMultiSelect"]',
}
#: page path -> (its link with the demo endpoint chosen, the Run button's key, a selector of its first live figure)
RUNS = {
    # the endpoint's status line counts the tokens received ("streaming · 3 tokens") from the first token on
    "compare": (
        "compare?ep=demo&prompt=Name%20three%20colours.&max_tokens=64",
        "cmp.run",
        re.compile(r"· \d+ tokens"),
    ),
    # the live chart: requests in flight, then tokens per second and latency as requests finish
    "loadtest": (
        "loadtest?ep=demo&num_prompts=16&num_warmups=0&max_concurrency=4&input_sizing=words&output_len=64",
        "lt.run",
        '[class*="st-key-lt-chart-live"] svg',
    ),
}
TTFT_MS, ITL_MS = 150.0, 20.0
QUIET_S = 1.0
#: Kept up to date in the page: the first time each answer selector matched, and the last change in the viewport.
OBSERVER = """
(() => {
  window.__pl = {first: null, last: 0, what: ''};
  const skip = '[data-testid="stHeader"],[data-testid="stStatusWidget"],[data-testid="stToolbar"],' +
               '[data-testid="stDecoration"]';
  // attribute changes that draw nothing: Streamlit's test hooks, accessibility links, a value set to what it was
  const silent = (m) => m.type === 'attributes' && (/^(data-test|aria-)/.test(m.attributeName || '') ||
    m.oldValue === m.target.getAttribute(m.attributeName));
  const inView = (node) => {
    const el = node && (node.nodeType === 1 ? node : node.parentElement);
    if (!el || el.closest(skip)) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth;
  };
  new MutationObserver((mutations) => {
    const now = performance.now();
    for (const m of mutations) {
      if (silent(m)) continue;
      const nodes = m.type === 'childList' ? [...m.addedNodes] : [m.target];
      const seen = nodes.find(inView);
      if (seen) {
        window.__pl.last = now;
        const el = seen.nodeType === 1 ? seen : seen.parentElement;
        const owner = el.closest('[data-testid]');
        window.__pl.what = (owner ? owner.dataset.testid : '') + ' ' + m.type + ' ' + (m.attributeName || '') +
          ' ' + el.tagName + '.' + String(el.className).slice(0, 40) + ' ' + (el.textContent || '').slice(0, 30);
        break;
      }
    }
    if (window.__pl.first === null && window.__answer && document.querySelector(window.__answer)) {
      window.__pl.first = now;
    }
  }).observe(document, {subtree: true, childList: true, attributes: true, attributeOldValue: true,
                        characterData: true});
})();
"""
_IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
_SKELETON = "[data-testid='stSkeleton']"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within {timeout_s:.0f} s")


@dataclass
class App:
    """One checkout's ``streamlit run`` and what was measured on it."""

    root: Path
    name: str
    env: dict[str, str]
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen | None = None
    context: BrowserContext | None = None
    #: page -> [(first answer s, complete first screen s, load average)]
    loads: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    #: page -> [(click→first request s, click→first generation s, first token→live figure s, load average)]
    runs: dict[str, list[tuple[float, float, float, float]]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"),
                *("--server.port", str(self.port), "--server.fileWatcherType", "none"),
                *("--browser.gatherUsageStats", "false"),
            ],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)


def _open(app: App, browser: Browser, path: str, *, fresh: bool) -> tuple[Page, BrowserContext | None]:
    """A new tab on ``path`` with the observer installed; its own context when ``fresh`` (closed by the caller)."""
    own = browser.new_context(viewport=VIEWPORT) if fresh else None
    context = own or app.context
    assert context is not None
    page = context.new_page()
    page.add_init_script(OBSERVER)
    page.add_init_script(f"window.__answer = {json.dumps(PAGES[path.split('?')[0]])};")
    page.set_default_timeout(120_000)
    page.goto(f"{app.url}/{path}")
    return page, own


def _settled(page: Page) -> tuple[float, float]:
    """Wait for the answer and a quiet, idle first screen; (first answer s, complete first screen s)."""
    page.wait_for_function("window.__pl && window.__pl.first !== null", polling=50, timeout=120_000)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        page.wait_for_timeout(100)
        now, last = page.evaluate("[performance.now(), window.__pl.last]")
        if now - last >= QUIET_S * 1000 and page.locator(_IDLE).count() and not _skeleton_in_view(page):
            break
    first, last, what = page.evaluate("[window.__pl.first, window.__pl.last, window.__pl.what]")
    if os.environ.get("PAGE_LOAD_DEBUG"):
        print(f"{page.url}: first answer {first / 1000:.2f} s, last change in view {last / 1000:.2f} s: {what}")
    return first / 1000, max(first, last) / 1000


def _skeleton_in_view(page: Page) -> bool:
    return bool(
        page.evaluate(
            f"[...document.querySelectorAll({json.dumps(_SKELETON)})].some(e => {{"
            " const r = e.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0; })"
        )
    )


def _load(app: App, browser: Browser, path: str, *, fresh: bool, counted: bool) -> None:
    page, own = _open(app, browser, path, fresh=fresh)
    first, complete = _settled(page)
    if counted:
        app.loads.setdefault(path, []).append((first, complete, os.getloadavg()[0]))
    page.close()
    if own is not None:
        own.close()


def _run(app: App, browser: Browser, demo: str, path: str, *, fresh: bool, counted: bool) -> None:
    link, button, chart = RUNS[path]  # chart: a CSS selector, or a pattern of a markdown element's text
    page, own = _open(app, browser, link, fresh=fresh)
    _settled(page)
    run = page.locator(f".st-key-{button.replace('.', '-')} button")
    run.wait_for()
    page.wait_for_timeout(2000)  # a person reads the page before clicking
    httpx.delete(f"{demo}/_recorded", timeout=5)
    clicked = time.time()
    run.click()
    live = page.locator(chart) if isinstance(chart, str) else page.get_by_test_id("stMarkdown").filter(has_text=chart)
    live.first.wait_for(timeout=120_000)
    drawn = time.time()
    recorded = httpx.get(f"{demo}/_recorded", timeout=5).json()
    if os.environ.get("PAGE_LOAD_DEBUG"):
        for r in recorded:
            agent = {k.lower(): v for k, v in r.get("headers", {}).items()}.get("user-agent")
            print(path, f"{r['received_s'] - clicked:+.3f}", r["method"], r["path"], agent, file=sys.stderr)
    generations = [r["received_s"] for r in recorded if r["path"].endswith(("/completions", "/generate_stream"))]
    # the run's own requests: the worker's discovery, tokenizer and /metrics calls come within a second before its
    # first generation; earlier ones are the page's or a finished run's (a last /metrics scrape)
    received = [r["received_s"] for r in recorded if generations and min(generations) - 1.0 <= r["received_s"]]
    if counted and received and generations:
        first_token = min(generations) + TTFT_MS / 1000
        app.runs.setdefault(path, []).append(
            (min(received) - clicked, min(generations) - clicked, drawn - first_token, os.getloadavg()[0])
        )
    # let the run end before the next one, so runs never overlap
    page.locator(f".st-key-{button.replace('.', '-')} button:not([disabled])").wait_for(timeout=300_000)
    page.close()
    if own is not None:
        own.close()


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f}" if values else "   n/a"


def _report(apps: list[App], n: int, fresh: bool) -> None:
    tab = "a new context each load (first visit)" if fresh else "a fresh tab of a warm browser"
    print(f"\nPages: median seconds over {n} loads, {tab}, 1400 x 900; load = 1-minute load average (median)")
    print(f"{'page':14} {'app':10} {'first answer':>13} {'first screen':>13} {'slowest':>8} {'load':>6}")
    for path in PAGES:
        for app in apps:
            rows = app.loads.get(path, [])
            if not rows:
                continue
            print(
                f"{'/' + path:14} {app.name:10} {_median([r[0] for r in rows]):>13} "
                f"{_median([r[1] for r in rows]):>13} {max(r[1] for r in rows):8.2f} "
                f"{statistics.median(r[2] for r in rows):6.1f}"
            )
    if not any(app.runs for app in apps):
        return
    print(f"\nRuns against the demo server: median seconds over {n} clicks")
    print(f"{'page':14} {'app':10} {'click→request':>14} {'click→generation':>17} {'token→figure':>13} {'load':>6}")
    for path in RUNS:
        for app in apps:
            rows = app.runs.get(path, [])
            if not rows:
                continue
            print(
                f"{'/' + path:14} {app.name:10} {_median([r[0] for r in rows]):>14} "
                f"{_median([r[1] for r in rows]):>17} {_median([r[2] for r in rows]):>13} "
                f"{statistics.median(r[3] for r in rows):6.1f}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5, help="counted loads and clicks per page (default 5)")
    parser.add_argument("--against", type=Path, help="a second checkout measured in the same minutes")
    parser.add_argument("--fresh-context", action="store_true", help="a new browser context for every load")
    parser.add_argument("--pages", default=",".join(p or "budget" for p in PAGES), help="pages to load (comma list)")
    parser.add_argument("--runs", default=",".join(RUNS), help="endpoint pages to click Run on ('' = none)")
    args = parser.parse_args()
    pages = [("" if p == "budget" else p) for p in args.pages.split(",") if p]
    runs = [p for p in args.runs.split(",") if p]

    demo_port = _free_port()
    demo_url = f"http://127.0.0.1:{demo_port}"
    endpoints = Path(tempfile.mkdtemp()) / "endpoints.toml"
    endpoints.write_text(f'[[endpoint]]\nname = "demo"\nkind = "vllm"\nbase_url = "{demo_url}"\n')
    env = {**os.environ, "LLM_PLANNER_ENDPOINTS": str(endpoints), "HF_HUB_OFFLINE": "1"}
    demo = subprocess.Popen(
        [
            *(sys.executable, "-m", "planner", "demo-server", "--port", str(demo_port)),
            *("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    apps = [App(ROOT, "this", env)]
    if args.against is not None:
        apps.append(App(args.against.resolve(), args.against.name, env))
    try:
        for app in apps:
            app.start()
        _wait_healthy(demo_url + "/health")
        for app in apps:
            _wait_healthy(app.url + "/_stcore/health")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for app in apps:
                app.context = browser.new_context(viewport=VIEWPORT)
            for round_ in range(args.n + 1):  # round 0 warms imports and caches: not counted
                for path in pages:
                    for app in apps:
                        _load(app, browser, path, fresh=args.fresh_context, counted=round_ > 0)
                for path in runs:
                    for app in apps:
                        _run(app, browser, demo_url, path, fresh=args.fresh_context, counted=round_ > 0)
                print(f"round {round_} done, load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
            browser.close()
    finally:
        for app in apps:
            app.stop()
        demo.terminate()
        demo.wait(10)
    _report(apps, args.n, args.fresh_context)
    return 0


if __name__ == "__main__":
    sys.exit(main())
