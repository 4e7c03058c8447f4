"""Browser fixtures: ``streamlit run app.py`` on an ephemeral port, Debian's Chromium driven by Playwright, and
:class:`StreamlitPage`, which knows when a Streamlit script run has finished.

Waiting for Streamlit without sleeps: every browser page counts the ``script_finished`` messages the server sends
over the app's websocket (decoded with Streamlit's own ``ForwardMsg`` protobuf). An action that reruns the app is
done when a full run finished after it *and* the app root says ``data-test-script-state="notRunning"`` (the
attribute Streamlit's own e2e tests wait for). Fragment runs (Live Compare's ``run_every``) and runs cut short by a
newer rerun are not counted.

The browser is Chromium from the system (``/usr/bin/chromium`` on Debian; ``$E2E_CHROMIUM`` overrides), never a
Playwright download. Without it every test here is skipped, saying so, unless ``$E2E_REQUIRE_BROWSER`` is set
(``.ci/run`` sets it after installing Chromium, so CI cannot pass by skipping).
Screenshots go to ``tests/e2e/artifacts/`` (``$E2E_ARTIFACTS`` overrides).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, Request, sync_playwright
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

__all__ = ["ARTIFACTS", "CHROMIUM_FLAGS", "RUN_TIMEOUT_S", "StreamlitApp", "StreamlitPage"]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("E2E_ARTIFACTS") or Path(__file__).resolve().parent / "artifacts")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking")
#: One script run on a busy 2-core machine: the first run of a page imports pandas/plotly and plans.
RUN_TIMEOUT_S = 60.0
#: Starting ``streamlit run`` (imports) and answering /_stcore/health.
START_TIMEOUT_S = 60.0
VIEWPORT = {"width": 1400, "height": 900}
_FULL_RUNS = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR)
_IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
# An element whose code is still loading (Streamlit loads most element types lazily and draws this meanwhile).
_BUSY = "[data-testid='stSkeleton']"
_CONNECTED = "[data-testid='stApp'][data-test-connection-state='CONNECTED']"


def _chromium() -> str | None:
    """The system Chromium: ``$E2E_CHROMIUM``, ``/usr/bin/chromium``, else ``chromium``/``chromium-browser`` on PATH."""
    named = os.environ.get("E2E_CHROMIUM", "").strip()
    for candidate in (named, "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StreamlitApp:
    """A running ``streamlit run app.py``: its base URL and log."""

    def __init__(self, url: str, log: Path, first_visit: dict[str, object] | None = None) -> None:
        self.url = url
        self.log = log
        #: What the very first browser visit after the server started saw (a deep link; see the ``app`` fixture).
        self.first_visit = first_visit or {}

    def page_url(self, path: str = "", query: str = "") -> str:
        """``url`` + ``/path`` (a page's url_path, e.g. ``compare``) + ``?query``."""
        return f"{self.url}/{path.lstrip('/')}" + (f"?{query}" if query else "")


class StreamlitPage:
    """A Playwright page on the app that counts finished script runs (see the module docstring).

    Args:
        page: a fresh page; the run counter must be attached before the first navigation.
        timeout_s: default wait for one script run.
    """

    def __init__(self, page: Page, *, timeout_s: float = RUN_TIMEOUT_S) -> None:
        self.page = page
        self.timeout_s = timeout_s
        self.runs = 0
        #: URLs the page asked for off this machine (the app must work offline: fonts, icons and scripts are local)
        self.external: list[str] = []
        page.set_default_timeout(timeout_s * 1000)
        page.on("websocket", lambda ws: ws.on("framereceived", self._on_frame))
        page.on("request", self._on_request)

    def _on_request(self, request: Request) -> None:
        host = urlsplit(request.url).hostname
        if request.url.split(":", 1)[0] in ("http", "https", "ws", "wss") and host not in ("127.0.0.1", "localhost"):
            self.external.append(request.url)

    def _on_frame(self, payload: str | bytes) -> None:
        if isinstance(payload, str):
            return
        msg = ForwardMsg()
        try:
            msg.ParseFromString(payload)
        except Exception:  # a frame of another protocol is not ours to count
            return
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished in _FULL_RUNS:
            self.runs += 1

    # --- waiting ------------------------------------------------------------------------------------------------------
    def wait_for_run(self, since: int, *, timeout_s: float | None = None) -> None:
        """Wait until a full script run finished after the count was ``since``, the app shows it as idle and no
        element is still loading its code (Streamlit draws a skeleton for those)."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        while True:
            # Playwright delivers websocket events only while it is waiting, so poll through it.
            if self.runs > since and self.page.locator(_IDLE).count() and not self.page.locator(_BUSY).count():
                return
            if time.monotonic() > deadline:
                state = self.page.locator("[data-testid='stApp']").get_attribute("data-test-script-state")
                raise AssertionError(
                    f"Streamlit did not settle within {limit:.0f} s: {self.runs - max(since, 0)} new full run(s), "
                    f"script state {state!r}, {self.page.locator(_BUSY).count()} element(s) still loading"
                )
            self.page.wait_for_timeout(50)

    def settle(self, *, timeout_s: float | None = None) -> None:
        """Wait until no script run is going on and no element is still loading (after an expected rerun showed)."""
        self.wait_for_run(-1, timeout_s=timeout_s)

    def act(self, action: Callable[[], object], *, timeout_s: float | None = None) -> None:
        """Do ``action`` (a click, an Enter) and wait for the script run it causes."""
        since = self.runs
        action()
        self.wait_for_run(since, timeout_s=timeout_s)

    def goto(self, url: str) -> StreamlitPage:
        """Open ``url`` and wait for the first full run."""
        self.act(lambda: self.page.goto(url))
        self.page.locator(_CONNECTED).wait_for(state="attached")
        return self

    def navigate(self, title: str) -> None:
        """Switch page with the sidebar link called ``title``."""
        link = self.page.get_by_test_id("stSidebarNav").get_by_role("link", name=title)
        self.act(link.click)

    # --- widgets (found by aria-label, which Streamlit sets to the widget's label) ---------------------------------
    def _input(self, kind: str, label: str, nth: int) -> Locator:
        """The ``nth`` input of ``kind`` (combobox, textarea, text; number boxes are text) labelled ``label`` in the
        main area.

        CSS rather than ``get_by_role``: an open popover marks the rest of the page aria-hidden.
        """
        # a number box is a text input (pages/_numbers.py: the browser's number input rewrites what is typed)
        css = {"combobox": "input[role='combobox']", "textarea": "textarea"}
        selector = css.get(kind, "input[type='text']") + f"[aria-label={json.dumps(label)}]"
        return self.page.get_by_test_id("stMain").locator(selector).nth(nth)

    def select(self, label: str, option: str | re.Pattern[str], *, nth: int = 0, search: str | None = None) -> None:
        """Pick ``option`` (its shown text, or a pattern) in the ``nth`` selectbox labelled ``label``.

        Long option lists are virtualised, so a searchable box is first filtered by ``search`` (default: ``option``).
        """
        box = self._input("combobox", label, nth)
        if isinstance(option, str) and box.input_value() == option:
            return
        box.click()
        if box.is_editable():  # short option lists are not searchable
            box.fill(search if search is not None else (option if isinstance(option, str) else ""))
        choice = self.page.get_by_role("option", name=option, exact=isinstance(option, str))
        self.act(choice.first.click)

    def type_option(self, label: str, text: str, *, nth: int = 0) -> None:
        """Type ``text`` into a selectbox that accepts new options and press Enter."""
        box = self._input("combobox", label, nth)
        box.click()
        box.fill(text)
        self.act(lambda: box.press("Enter"))

    def number(self, label: str, value: float | int | str, *, nth: int = 0) -> None:
        """Type ``value`` into the ``nth`` number box labelled ``label`` and press Enter (nothing when it already
        shows ``value``: an unchanged widget causes no rerun to wait for; the same holds for the other setters)."""
        box = self._input("number", label, nth)
        if box.input_value() == str(value):  # no change, no rerun
            return
        box.fill(str(value))
        self.act(lambda: box.press("Enter"))

    def text_area(self, label: str, value: str, *, nth: int = 0) -> None:
        """Type ``value`` into a text area and apply it (Ctrl+Enter, as Streamlit's hint says)."""
        box = self._input("textarea", label, nth)
        if box.input_value() == value:
            return
        box.fill(value)
        self.act(lambda: box.press("Control+Enter"))

    def radio(self, label: str, option: str) -> None:
        """Pick ``option`` in the radio group labelled ``label``."""
        group = self.page.get_by_test_id("stMain").locator(f"[role='radiogroup'][aria-label={json.dumps(label)}]")
        choice = group.get_by_test_id("stRadioOption").filter(has_text=re.compile(rf"^{re.escape(option)}$"))
        if choice.locator("input").is_checked():
            return
        self.act(choice.click)

    def keyed(self, key: str) -> Locator:
        """The element container of the widget or element with Streamlit key ``key`` (class ``st-key-<key>``,
        Streamlit writes the key's other characters as ``-``)."""
        return self.page.locator(f".st-key-{re.sub(r'[^A-Za-z0-9_-]', '-', key)}")

    def interactive(self, key: str) -> Locator:
        """The container of the Plotly chart keyed ``key``, drawn. The pages draw a figure as SVG first (container
        ``<key>-static``) and Plotly in the "Interactive chart" popover under it (``pages/_light.py``): the popover is
        opened when the chart is not drawn yet."""
        chart = self.keyed(key).locator(".js-plotly-plot .main-svg")
        if not chart.count():
            # the static drawing sits in a layout wrapper; the popover is the element after that wrapper
            wrapper = self.keyed(f"{key}-static").locator("xpath=..")
            wrapper.locator("xpath=following-sibling::*[1]").get_by_role("button", name="Interactive chart").click()
        chart.first.wait_for()
        return self.keyed(key)

    def command(self, start: str) -> Locator:
        """The first command shown as text (a code span, ``pages/_light.py``) in the main area that starts with
        ``start``."""
        return (
            self.page.get_by_test_id("stMain")
            .locator("[data-testid='stMarkdown'] code")
            .filter(has_text=re.compile("^" + re.escape(start)))
        )

    def dataframe(self, column: str) -> Locator:
        """The first ``st.dataframe`` with a column headed ``column`` (dataframes carry no key class in the page; a wide
        table's folded "All columns" copy, ``pages/_tables.py``, comes after its headline grid)."""
        header = self.page.locator("th").filter(has_text=re.compile(rf"^{re.escape(column)}$"))
        return self.page.get_by_test_id("stDataFrame").filter(has=header).first

    def table(self, column: str, *, timeout_s: float | None = None) -> list[dict[str, str]]:
        """The rows of the ``st.dataframe`` with a column headed ``column``, as shown text, read from the
        accessible table the data grid keeps inside its canvas (``th`` headers, ``td`` cells)."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        grid = self.dataframe(column).get_by_test_id("data-grid-canvas")
        grid.locator("td").first.wait_for(state="attached", timeout=limit * 1000)
        header = [th.inner_text() for th in grid.locator("th").all()]
        rows = grid.locator("tbody tr").all()
        return [dict(zip(header, (td.inner_text() for td in row.locator("td").all()), strict=False)) for row in rows]

    def html_table(self, key: str) -> list[dict[str, str]]:
        """The rows of the HTML table a page draws first for the data grid keyed ``key`` (container ``<key>-static``,
        ``pages/_light.py``), as shown text."""
        table = self.keyed(f"{key}-static").locator("table")
        table.locator("td").first.wait_for(state="attached", timeout=self.timeout_s * 1000)
        header = [th.inner_text() for th in table.locator("th").all()]
        rows = table.locator("tbody tr").all()
        return [dict(zip(header, (td.inner_text() for td in row.locator("td").all()), strict=False)) for row in rows]

    def overflowing_html_tables(self) -> list[dict[str, float]]:
        """The visible HTML tables in the main area wider than their scroll box: each one's width and box width, px."""
        return self.page.evaluate(
            """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stHtml"] table')]
                .filter(t => t.offsetParent !== null)
                .map(t => t.parentElement)
                .filter(box => box.scrollWidth > box.clientWidth + 1)
                .map(box => ({columns_px: box.scrollWidth, box_px: box.clientWidth}))"""
        )

    def widget_values(self) -> list[tuple[str, str]]:
        """Every widget in the main area as ``(label, shown value)`` in page order (radios: the picked option)."""
        pairs = self.page.evaluate(
            """() => {
                const main = document.querySelector('[data-testid="stMain"]');
                const out = [];
                for (const el of main.querySelectorAll('input, textarea')) {
                    if (el.type === 'radio') {
                        if (!el.checked) continue;
                        const group = el.closest('[role="radiogroup"]');
                        const option = el.closest('[data-testid="stRadioOption"]');
                        out.push([group ? group.getAttribute('aria-label') : '', option ? option.innerText : '']);
                    } else if (el.type === 'checkbox') {
                        const box = el.closest('[data-testid="stCheckbox"], [data-testid="stToggle"]')
                            || el.parentElement;
                        out.push([box.innerText.trim(), String(el.checked)]);
                    } else if (el.type !== 'file') {
                        out.push([el.getAttribute('aria-label') || '', el.value]);
                    }
                }
                return out;
            }"""
        )
        return [(label, value) for label, value in pairs]

    # --- layout ---------------------------------------------------------------------------------------------------
    def overflowing_grids(self) -> list[dict[str, float]]:
        """The visible data grids (``st.dataframe``) wider than their box: each one's columns and box width, px.

        A grid wider than its box scrolls sideways inside itself, so its right-hand columns look cut off.
        """
        return self.page.evaluate(
            """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')]
                .filter(el => el.offsetParent !== null)
                .map(el => el.querySelector('.dvn-scroller'))
                .filter(s => s && s.scrollWidth > s.clientWidth + 1)
                .map(s => ({columns_px: s.scrollWidth, box_px: s.clientWidth}))"""
        )

    def clipped_code(self) -> list[str]:
        """The start of each visible ``st.code`` block whose text runs past its right edge, and of each code span (a
        command shown as text) that runs past its markdown block's."""
        return self.page.evaluate(
            """() => [
                ...[...document.querySelectorAll('[data-testid="stMain"] [data-testid="stCode"] pre')]
                    .filter(el => el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1),
                ...[...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdown"] code')]
                    .filter(el => el.offsetParent !== null && el.getBoundingClientRect().right >
                        el.closest('[data-testid="stMarkdown"]').getBoundingClientRect().right + 1),
            ].map(el => el.innerText.slice(0, 60))"""
        )

    def cut_inputs(self, label: str) -> list[str]:
        """The shown values of the inputs (selectboxes, text boxes) labelled ``label`` whose text is wider than the
        box, measured with the box's own font."""
        return self.page.evaluate(
            """(label) => {
                const ctx = document.createElement('canvas').getContext('2d');
                const out = [];
                for (const box of document.querySelectorAll(`[data-testid="stMain"] input[aria-label="${label}"]`)) {
                    const style = getComputedStyle(box);
                    ctx.font = style.font;
                    const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
                    if (ctx.measureText(box.value).width > room) out.push(box.value);
                }
                return out;
            }""",
            label,
        )

    # --- checks and artifacts -------------------------------------------------------------------------------------
    def text(self) -> str:
        """The visible text of the main area."""
        return self.page.get_by_test_id("stMain").inner_text()

    def assert_no_exception(self) -> None:
        """No Streamlit exception box and no Python traceback text anywhere on the page."""
        boxes = self.page.get_by_test_id("stException")
        assert boxes.count() == 0, "Streamlit exception on the page: " + boxes.first.inner_text()[:2000]
        body = self.page.locator("body").inner_text()
        assert "Traceback" not in body, body[body.index("Traceback") :][:2000]

    def screenshot(self, name: str) -> Path:
        """Save the whole page as ``<artifacts>/<name>.png``: the viewport is grown to the main area's scroll height.

        Streamlit scrolls inside ``stMain``, so Playwright's ``full_page`` alone would only show the first screen.
        """
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page = self.page
        size = page.viewport_size or VIEWPORT
        height = size["height"]
        for _ in range(5):  # growing the viewport can reflow the page; stop when the height holds
            wanted = page.evaluate(
                "() => Math.max(document.querySelector('[data-testid=\"stMain\"]').scrollHeight, "
                "document.querySelector('[data-testid=\"stSidebarContent\"]')?.scrollHeight || 0)"
            )
            wanted = max(size["height"], min(int(wanted), 16000))
            if wanted == height:
                break
            height = wanted
            page.set_viewport_size({"width": size["width"], "height": height})
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True, animations="disabled")
        page.set_viewport_size(size)
        return path


# --- fixtures ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="package")
def chromium_path() -> str:
    """The system Chromium, or a skip naming what is missing."""
    path = _chromium()
    if path is None:
        reason = "Chromium not found (/usr/bin/chromium or chromium on PATH): apt-get install chromium, or .ci/run"
        if os.environ.get("E2E_REQUIRE_BROWSER", "").strip() not in ("", "0"):
            pytest.fail(reason + " (E2E_REQUIRE_BROWSER is set, as .ci/run sets it)")
        pytest.skip(reason)
    return path


def _endpoints_toml(request: pytest.FixtureRequest) -> str:
    """endpoints.toml for the app: the session's real llama.cpp server as ``llama``.

    Without llama-cpp-python the entry points at a closed port, so the pages still load; the tests that need
    answers ask for ``llama_url`` themselves and skip with its reason.
    """
    try:
        url = request.getfixturevalue("llama_url")
    except pytest.skip.Exception:
        url = f"http://127.0.0.1:{_free_port()}"
    return f'[[endpoint]]\nname = "llama"\nkind = "llamacpp"\nbase_url = "{url}"\n'


def _first_visit(browser: Browser, url: str) -> dict[str, object]:
    """Open a deep link as the server's FIRST visitor (a shared link after a restart): Streamlit's legacy ``pages/``
    mode would run the page without the router. Returns the sidebar entries and the restored ``num_prompts``."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(url + "/loadtest?num_prompts=5")
        page.get_by_role("heading", name="Load Test").wait_for(timeout=START_TIMEOUT_S * 1000)
        box = page.get_by_role("textbox", name="num_prompts")  # the box, not its help button ("Help for ...")
        box.wait_for(timeout=START_TIMEOUT_S * 1000)
        return {
            # each link's text is "<material icon name>\n\n<title>"
            "nav": [t.split("\n")[-1] for t in page.locator('[data-testid="stSidebarNavLink"]').all_inner_texts()],
            "num_prompts": box.input_value(),
            "url": page.url,
        }
    finally:
        context.close()


@pytest.fixture(scope="package")
def app(
    chromium_path: str, browser: Browser, request: pytest.FixtureRequest, tmp_path_factory
) -> Iterator[StreamlitApp]:
    """``streamlit run app.py`` on a free 127.0.0.1 port, healthy, offline and with its own caches; stopped after.

    Its first visitor opens a deep link (:func:`_first_visit`), kept as ``first_visit`` for a test to check.

    Its endpoints file names the session's llama.cpp server (started meanwhile). The file watcher is off, so edits
    elsewhere in the working tree cannot put a "source changed" prompt on a page under test.
    """
    tmp = tmp_path_factory.mktemp("e2e_app")
    endpoints = tmp / "endpoints.toml"
    dropped = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "LLM_PLANNER_ALLOW_CUSTOM_ENDPOINTS")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        LLM_PLANNER_ENDPOINTS=str(endpoints),
        LLM_PLANNER_CACHE=str(tmp / "planner-cache"),
        HF_HOME=str(tmp / "hf"),
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        PYTHONUNBUFFERED="1",
    )
    port = _free_port()
    log = tmp / "streamlit.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "streamlit", "run", "app.py"),
                *("--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1"),
                *("--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so teardown reaches any child it spawned
        )
    url = f"http://127.0.0.1:{port}"
    try:
        endpoints.write_text(_endpoints_toml(request), encoding="utf-8")  # llama starts while streamlit imports
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}: {log.read_text(errors='replace')[-1500:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/_stcore/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit did not answer /_stcore/health within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.2)
        yield StreamlitApp(url, log, _first_visit(browser, url))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


@pytest.fixture(scope="package")
def browser(chromium_path: str) -> Iterator[Browser]:
    """Headless system Chromium (package scope: Playwright's event loop ends before the other test packages run)."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path, args=list(CHROMIUM_FLAGS))
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Keep each phase's report on the test item, so fixtures can tell a failed test at teardown."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def open_page(
    browser: Browser, app: StreamlitApp, request: pytest.FixtureRequest
) -> Iterator[Callable[..., StreamlitPage]]:
    """``open_page(path="", query="")``: a NEW browser context (its own cookies, storage and Streamlit session)
    with one page on the app, loaded and idle. Every context is closed after the test; when the test failed, each
    page is first saved as ``failed-<test>-<n>.png`` next to the screenshots and the app's log tail is printed."""
    contexts: list[BrowserContext] = []
    pages: list[StreamlitPage] = []

    def _open(path: str = "", query: str = "", *, url: str | None = None) -> StreamlitPage:
        context = browser.new_context(viewport=VIEWPORT)
        contexts.append(context)
        page = StreamlitPage(context.new_page())
        pages.append(page)
        return page.goto(url or app.page_url(path, query))

    yield _open
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        print(f"--- last lines of {app.log} ---\n{app.log.read_text(errors='replace')[-3000:]}")
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)
        for n, page in enumerate(pages):
            with contextlib.suppress(Exception):  # best effort: the page may be what broke
                page.screenshot(f"failed-{name}-{n}")
    for context in contexts:
        with contextlib.suppress(Exception):  # a context of a crashed browser is already gone
            context.close()
