"""Real-browser end-to-end tests: ``streamlit run app.py`` on an ephemeral port, driven by Playwright's Python
package through the system Chromium (``/usr/bin/chromium``; ``.ci/run`` installs it with apt-get when missing).

Run them alone with ``python -m pytest tests/e2e`` (about 2–3 minutes on two cores; deselect with
``-m 'not e2e'``). They cover: every page loads with no exception; a scenario changed in the UI, copied as a link
and opened in a new browser context restores exactly; a Live Compare run and a short Load Test against the real
llama.cpp server (``llama_url`` in tests/conftest.py); two sessions at once that do not see each other's state.

Environment: ``E2E_ARTIFACTS`` (screenshot directory, default ``tests/e2e/artifacts/``, git-ignored),
``E2E_CHROMIUM`` (another Chromium binary), ``E2E_REQUIRE_BROWSER=1`` (fail instead of skip without Chromium).
Playwright's own browser download (``playwright install``) is not used.
"""
