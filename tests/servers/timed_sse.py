"""The tests' timed server: :mod:`planner.demo` started on an ephemeral port, health-polled, stopped.

The server's constants (``MODEL_ID``, ``CONTEXT_ERROR``, ...) live in :mod:`planner.demo`.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

__all__ = ["TimedServer"]


class TimedServer:
    """Start the timed server in a subprocess on an ephemeral port; a context manager.

    Args:
        legacy_metrics: serve ``/metrics`` with the names of vLLM before 0.9 (``--legacy-metrics``).
        max_num_seqs: at most this many requests generate at once; the others wait (``vllm:num_requests_waiting``)
            and their timeline starts when admitted, so throughput saturates at this concurrency (a sweep's knee).
            None = no limit.
        tokenizer: ``"fixed"`` (every prompt 12 tokens, no ``/tokenize``) or ``"bytes"`` (one token per byte of the
            chat-templated prompt, with vLLM's ``/tokenize``).
        prefix_caching: keep a prefix cache and export ``vllm:prefix_cache_queries``/``hits``
            (``--enable-prefix-caching``).
        prefill_ms_per_token: more time to the first token per prompt token not served from the cache, ms.
        planned: flags of ``python -m planner demo-server``'s planned mode (``("--model", M, "--gpu", G, ...)``):
            the server is started through the CLI and plays that deployment.
        flags: more of the server's flags, e.g. ``("--ttft-ms", "50", "--itl-ms", "10")``.

    Attributes:
        url: ``http://127.0.0.1:<port>`` once started.
    """

    def __init__(
        self,
        *,
        legacy_metrics: bool = False,
        max_num_seqs: int | None = None,
        tokenizer: str = "fixed",
        planned: tuple[str, ...] = (),
        prefix_caching: bool = False,
        prefill_ms_per_token: float = 0.0,
        flags: tuple[str, ...] = (),
    ) -> None:
        self.prefix_caching = prefix_caching
        self.prefill_ms_per_token = prefill_ms_per_token
        self.url = ""
        self.planned = planned
        self.flags = flags
        self.legacy_metrics = legacy_metrics
        self.max_num_seqs = max_num_seqs
        self.tokenizer = tokenizer
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> TimedServer:
        root = Path(__file__).resolve().parents[2]
        entry = ("planner", "demo-server", *self.planned) if self.planned else ("planner.demo",)
        self._proc = subprocess.Popen(
            [
                *(sys.executable, "-m", *entry, "--port", "0"),
                *(("--legacy-metrics",) if self.legacy_metrics else ()),
                *(("--max-num-seqs", str(self.max_num_seqs)) if self.max_num_seqs else ()),
                *("--tokenizer", self.tokenizer),
                *(("--enable-prefix-caching",) if self.prefix_caching else ()),
                *(("--prefill-ms-per-token", str(self.prefill_ms_per_token)) if self.prefill_ms_per_token else ()),
                *self.flags,
            ],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        port = re.match(r"PORT (\d+)|demo server on http://127\.0\.0\.1:(\d+)", line)
        if port is None:
            self.__exit__(None, None, None)
            raise RuntimeError(f"timed server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(port.group(1) or port.group(2))}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            time.sleep(0.05)
        self.__exit__(None, None, None)
        raise RuntimeError("timed server did not become healthy")

    def recorded(self) -> list[dict[str, Any]]:
        """Requests received so far (``method``, ``path``, ``headers`` lower-cased, ``body`` text), oldest first."""
        return httpx.get(self.url + "/_recorded", timeout=5).json()

    def clear_recorded(self) -> None:
        """Forget the requests received so far."""
        httpx.delete(self.url + "/_recorded", timeout=5)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None
