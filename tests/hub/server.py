"""A local stand-in for the Hugging Face Hub that the real `huggingface_hub` client talks to.

It serves the routes and headers huggingface_hub 2.4.0 really uses (read from its source):

- ``HEAD|GET /{repo_id}/resolve/{revision}/{filename}`` (``hf_hub_url``; ``get_hf_file_metadata`` sends HEAD,
  ``http_get`` and ``parse_safetensors_file_metadata`` send GET). Small files answer 200 with ``ETag`` (the git blob
  sha1, quoted), ``X-Repo-Commit`` and ``Content-Length``. ``.safetensors`` files are LFS files: the Hub answers 302
  with ``X-Linked-Etag`` (sha256), ``X-Linked-Size`` and a ``Location`` on a CDN host. The CDN here is a second
  listener on 127.0.0.1 with another port, so ``_httpx2_follow_hub_redirects_with_backoff`` stops at the 302 (a
  different origin, as with the real CDN) and httpx drops the ``Authorization`` header when it follows the redirect.
- ``GET {cdn}/cdn/{repo_id}/{sha256}/{filename}``: the safetensors bytes. They are header-only (8-byte little-endian
  header length + JSON header with correct ``data_offsets``) followed by virtual zero bytes up to the real file size.
  ``Range`` is honoured (206 + ``Content-Range``); a GET without ``Range``, or one that reaches further than the
  client's 100,001-byte header probe into tensor data, is a weights download: it is logged in ``weights_downloads``
  and refused with 403.
- ``GET /api/models/{repo_id}`` and ``/api/models/{repo_id}/revision/{revision}`` (``HfApi.model_info``).
- ``GET /api/models/{repo_id}/safetensors-metadata/{filename}`` (``HfApi.get_sharded_safetensors_metadata``).

Errors carry ``X-Error-Code`` / ``X-Error-Message`` the way ``hf_raise_for_status`` reads them: ``RepoNotFound``
(404), ``EntryNotFound`` (404, with ``X-Repo-Commit``), ``RevisionNotFound`` (404), ``GatedRepo`` (401 without a
token, 403 with a token that has no access).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import socket
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit

__all__ = ["DTYPE_BYTES", "HubStandIn", "build_safetensors_header", "tensor_bytes", "tensor_numel"]

#: Bytes per element of the safetensors dtypes (https://github.com/huggingface/safetensors, ``Dtype``).
DTYPE_BYTES: dict[str, int] = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}

# parse_safetensors_file_metadata first asks for "bytes=0-100000" (hf_api.py); anything reaching past that into
# tensor data is a weights download.
_HEADER_PROBE_BYTES = 100_001


def tensor_numel(shape: list[int]) -> int:
    """Number of elements of a tensor of this shape (1 for a scalar)."""
    return math.prod(shape) if shape else 1


def tensor_bytes(dtype: str, shape: list[int]) -> int:
    """Bytes a tensor takes in a safetensors file: numel × bytes per element of ``dtype``."""
    return tensor_numel(shape) * DTYPE_BYTES[dtype]


def build_safetensors_header(tensors: dict[str, tuple[str, list[int]]]) -> tuple[bytes, int]:
    """Encode the header of a safetensors file holding ``tensors`` in insertion order.

    Returns:
        ``(prefix, data_bytes)``: the 8-byte little-endian header length followed by the JSON header (padded with
        spaces to a multiple of 8, as the safetensors writer does), and the byte length of the tensor data after it.
    """
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = tensor_bytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    return struct.pack("<Q", len(encoded)) + encoded, offset


def _git_blob_sha1(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class _File:
    content: bytes  # for LFS safetensors: the 8-byte length + JSON header only
    lfs: bool = False
    virtual_size: int = 0  # full size the real file would have (header + tensor data)
    sha256: str = ""

    @property
    def size(self) -> int:
        return self.virtual_size if self.lfs else len(self.content)


@dataclass
class _Repo:
    repo_id: str
    commit: str
    gated: bool
    token: str | None
    pipeline_tag: str | None
    files: dict[str, _File] = field(default_factory=dict)
    parameters: dict[str, int] = field(default_factory=dict)
    config: dict | None = None
    index: dict | None = None
    headers: dict[str, dict] = field(default_factory=dict)  # safetensors filename -> decoded header


class _Reply(Exception):
    """Raised inside the handler to send an error response."""

    def __init__(self, status: int, code: str | None, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    hub: HubStandIn

    def handle_error(self, request, client_address) -> None:  # a client that hung up is not a test failure
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "HubStandIn/1.0"

    def log_message(self, format, *args) -> None:  # keep pytest output clean
        pass

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def _dispatch(self, method: str) -> None:
        hub = self.server.hub
        headers = {k.lower(): v for k, v in self.headers.items()}
        hub._log(method, self.path, headers)
        repo_id = hub._repo_id_of(self.path)
        if repo_id is not None and repo_id in hub._outages:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if repo_id is not None and repo_id in hub._hangs:
            hub._stopping.wait(hub._hangs[repo_id])
        try:
            status, reply_headers, body = hub._route(method, self.path, headers, self.server is hub._cdn_server)
        except _Reply as reply:
            status, body = reply.status, json.dumps({"error": reply.message}).encode()
            reply_headers = {"Content-Type": "application/json", **reply.headers}
            if reply.code:
                reply_headers["X-Error-Code"] = reply.code
            reply_headers["X-Error-Message"] = reply.message
        try:
            self.send_response(status)
            for name, value in reply_headers.items():
                self.send_header(name, value)
            if "Content-Length" not in reply_headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


class HubStandIn:
    """A threaded HTTP server on 127.0.0.1 (ephemeral ports) that answers like huggingface.co.

    Attributes:
        endpoint: ``"http://127.0.0.1:PORT"``, to pass as ``endpoint=`` / ``HF_ENDPOINT``.
        cdn_endpoint: the second listener that serves LFS (``.safetensors``) bytes after the 302.
        requests: ``(method, path, headers)`` of every request received, headers with lower-case names, CDN
            requests included (their path starts with ``/cdn/``).
        weights_downloads: the subset of ``requests`` that tried to read tensor data (refused with 403).

    Example:
        >>> with HubStandIn() as hub:
        ...     hub.add_model("org/tiny", files={"config.json": {"model_type": "llama"}})
        ...     path = hf_hub_download("org/tiny", "config.json", endpoint=hub.endpoint, cache_dir=tmp)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._repos: dict[str, _Repo] = {}
        self._outages: set[str] = set()
        self._hangs: dict[str, float] = {}
        self._stopping = threading.Event()
        self.requests: list[tuple[str, str, dict]] = []
        self.weights_downloads: list[tuple[str, str, dict]] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._cdn_server = _Server(("127.0.0.1", 0), _Handler)
        self._server.hub = self._cdn_server.hub = self
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.cdn_endpoint = f"http://127.0.0.1:{self._cdn_server.server_address[1]}"
        self._threads: list[threading.Thread] = []

    # ----------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> HubStandIn:
        """Start both listeners in daemon threads; returns self."""
        for server in (self._server, self._cdn_server):
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def close(self) -> None:
        """Stop serving, wake hanging handlers and close the listening sockets."""
        self._stopping.set()
        for server in (self._server, self._cdn_server):
            if self._threads:
                server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()

    def __enter__(self) -> HubStandIn:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------------- set-up API
    def add_model(
        self,
        repo_id: str,
        *,
        files: dict[str, bytes | str | dict] | None = None,
        tensors: dict[str, tuple[str, list[int]]] | None = None,
        shards: int = 1,
        gated: bool = False,
        token: str | None = None,
        commit: str | None = None,
        pipeline_tag: str | None = "text-generation",
    ) -> None:
        """Publish a model repo.

        Args:
            repo_id: ``"org/name"``.
            files: extra repo files; a dict is JSON-encoded, a str UTF-8 encoded.
            tensors: safetensors tensors, name → (dtype such as ``"BF16"``, shape), in file order. ``shards == 1``
                writes ``model.safetensors``; ``shards > 1`` writes ``model-0000k-of-0000n.safetensors`` (split in
                order, by bytes) and ``model.safetensors.index.json`` with ``weight_map`` and
                ``metadata.total_size`` (bytes of tensor data).
            shards: number of safetensors files, >= 1.
            gated: files need ``Authorization: Bearer <token>``; without it 401 GatedRepo, with another token 403.
            token: the token that has access to a gated repo.
            commit: 40-hex commit sha; derived from ``repo_id`` when omitted.
            pipeline_tag: reported by ``/api/models``.

        Raises:
            ValueError: ``shards`` < 1 or more shards than tensors, a gated repo without ``token``, a bad dtype.
        """
        if shards < 1:
            raise ValueError(f"shards must be >= 1, got {shards}")
        if gated and not token:
            raise ValueError("a gated repo needs the token that has access to it")
        tensors = dict(tensors or {})
        if tensors and shards > len(tensors):
            raise ValueError(f"shards={shards} is more than the {len(tensors)} tensors")
        for name, (dtype, _shape) in tensors.items():
            if dtype not in DTYPE_BYTES:
                raise ValueError(f"tensor {name!r}: dtype {dtype!r} is not one of {sorted(DTYPE_BYTES)}")
        repo = _Repo(
            repo_id=repo_id,
            commit=commit or hashlib.sha1(repo_id.encode()).hexdigest(),
            gated=gated,
            token=token,
            pipeline_tag=pipeline_tag,
        )
        for name, value in (files or {}).items():
            if isinstance(value, dict):
                content = json.dumps(value, indent=2).encode()
            elif isinstance(value, str):
                content = value.encode()
            else:
                content = bytes(value)
            repo.files[name] = _File(content)
        if "config.json" in repo.files:
            try:
                repo.config = json.loads(repo.files["config.json"].content)
            except (ValueError, RecursionError):  # a malformed config is served as is, for the client to refuse
                repo.config = None
        if tensors:
            self._add_safetensors(repo, tensors, shards)
        with self._lock:
            self._repos[repo_id] = repo

    def set_outage(self, repo_id: str) -> None:
        """Every request for ``repo_id`` (resolve, API and CDN) is dropped: the connection closes unanswered."""
        with self._lock:
            self._outages.add(repo_id)

    def set_hang(self, repo_id: str, seconds: float) -> None:
        """Sleep ``seconds`` before answering any request for ``repo_id`` (to test client timeouts)."""
        with self._lock:
            self._hangs[repo_id] = seconds

    # -------------------------------------------------------------------------------------------- internals
    @staticmethod
    def _add_safetensors(repo: _Repo, tensors: dict[str, tuple[str, list[int]]], shards: int) -> None:
        items = list(tensors.items())
        total = sum(tensor_bytes(dtype, shape) for _name, (dtype, shape) in items)
        # Split in file order by bytes (as save_pretrained's max_shard_size does); by count if a shard would be empty.
        assignment, cumulative = [], 0
        for _name, (dtype, shape) in items:
            assignment.append(min(cumulative * shards // total, shards - 1) if total else 0)
            cumulative += tensor_bytes(dtype, shape)
        if len(set(assignment)) < shards:
            assignment = [position * shards // len(items) for position in range(len(items))]
        groups: list[dict[str, tuple[str, list[int]]]] = [{} for _ in range(shards)]
        for (name, spec), shard in zip(items, assignment, strict=True):
            groups[shard][name] = spec
        weight_map: dict[str, str] = {}
        for number, group in enumerate(groups, start=1):
            filename = "model.safetensors" if shards == 1 else f"model-{number:05d}-of-{shards:05d}.safetensors"
            prefix, data_bytes = build_safetensors_header(group)
            digest = hashlib.sha256(repo.repo_id.encode() + b"/" + filename.encode() + prefix).hexdigest()
            repo.files[filename] = _File(prefix, lfs=True, virtual_size=len(prefix) + data_bytes, sha256=digest)
            repo.headers[filename] = json.loads(prefix[8:])
            for name, (dtype, shape) in group.items():
                weight_map[name] = filename
                repo.parameters[dtype] = repo.parameters.get(dtype, 0) + tensor_numel(shape)
        if shards > 1:
            repo.index = {"metadata": {"total_size": total}, "weight_map": weight_map}
            repo.files["model.safetensors.index.json"] = _File(json.dumps(repo.index, indent=2).encode())

    def _log(self, method: str, path: str, headers: dict) -> None:
        with self._lock:
            self.requests.append((method, path, headers))

    def _repo_id_of(self, raw_path: str) -> str | None:
        path = unquote(urlsplit(raw_path).path)
        if path.startswith("/api/models/"):
            rest = path[len("/api/models/") :]
            for marker in ("/revision/", "/safetensors-metadata/", "/tree/"):
                if marker in rest:
                    return rest.split(marker, 1)[0]
            return rest.rstrip("/")
        if path.startswith("/cdn/"):
            parts = path[len("/cdn/") :].split("/")
            return "/".join(parts[:2]) if len(parts) >= 4 else parts[0]
        if "/resolve/" in path:
            return path.split("/resolve/", 1)[0].lstrip("/")
        return None

    def _get_repo(self, repo_id: str, url: str) -> _Repo:
        with self._lock:
            repo = self._repos.get(repo_id)
        if repo is None:
            raise _Reply(404, "RepoNotFound", f"Repository not found: {repo_id} ({url})")
        return repo

    @staticmethod
    def _check_revision(repo: _Repo, revision: str) -> None:
        if revision not in ("main", repo.commit):
            raise _Reply(404, "RevisionNotFound", f"Invalid rev id: {revision}")

    @staticmethod
    def _check_access(repo: _Repo, headers: dict) -> None:
        if not repo.gated:
            return
        auth = headers.get("authorization", "")
        if not auth.lower().startswith("bearer "):
            raise _Reply(
                401,
                "GatedRepo",
                f"Access to model {repo.repo_id} is restricted. You must have access to it and be authenticated to"
                " access it. Please log in.",
            )
        if auth[len("bearer ") :].strip() != repo.token:
            raise _Reply(
                403,
                "GatedRepo",
                f"Access to model {repo.repo_id} is restricted and you are not in the authorized list. Visit"
                f" https://huggingface.co/{repo.repo_id} to ask for access.",
            )

    def _route(self, method: str, raw_path: str, headers: dict, on_cdn: bool) -> tuple[int, dict, bytes]:
        path = urlsplit(raw_path).path
        url = (self.cdn_endpoint if on_cdn else self.endpoint) + raw_path
        if on_cdn:
            if not path.startswith("/cdn/"):
                raise _Reply(404, None, f"Not found: {raw_path}")
            return self._serve_cdn(method, raw_path, headers, url)
        if path.startswith("/api/models/"):
            if method != "GET":
                raise _Reply(405, None, f"{method} not allowed on {path}")
            return self._serve_api(unquote(path[len("/api/models/") :]), headers, url)
        if "/resolve/" in path:
            repo_part, rest = path.split("/resolve/", 1)
            revision, _, filename = rest.partition("/")
            return self._serve_resolve(unquote(repo_part.lstrip("/")), unquote(revision), unquote(filename), headers)
        raise _Reply(404, None, f"Not found: {raw_path}")

    def _serve_resolve(self, repo_id: str, revision: str, filename: str, headers: dict) -> tuple[int, dict, bytes]:
        repo = self._get_repo(repo_id, f"{self.endpoint}/{repo_id}/resolve/{revision}/{filename}")
        self._check_revision(repo, revision)
        self._check_access(repo, headers)
        file = repo.files.get(filename)
        if file is None:
            raise _Reply(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": repo.commit})
        if file.lfs:
            location = f"{self.cdn_endpoint}/cdn/{repo_id}/{file.sha256}/{quote(filename)}"
            return (
                302,
                {
                    "Location": location,
                    "X-Repo-Commit": repo.commit,
                    "ETag": f'"{file.sha256}"',
                    "X-Linked-Etag": f'"{file.sha256}"',
                    "X-Linked-Size": str(file.virtual_size),
                    "Content-Type": "text/plain; charset=utf-8",
                },
                b"Found. Redirecting to " + location.encode(),
            )
        return (
            200,
            {
                "X-Repo-Commit": repo.commit,
                "ETag": f'"{_git_blob_sha1(file.content)}"',
                "Content-Type": "application/json" if filename.endswith(".json") else "application/octet-stream",
                "Accept-Ranges": "bytes",
            },
            file.content,
        )

    def _serve_cdn(self, method: str, raw_path: str, headers: dict, url: str) -> tuple[int, dict, bytes]:
        parts = unquote(urlsplit(raw_path).path)[len("/cdn/") :].split("/")
        repo_id, sha256, filename = "/".join(parts[:-2]), parts[-2], parts[-1]
        repo = self._get_repo(repo_id, url)
        file = repo.files.get(filename)
        if file is None or file.sha256 != sha256:
            raise _Reply(404, None, f"No such blob: {raw_path}")
        base = {"Accept-Ranges": "bytes", "ETag": f'"{sha256}"', "Content-Type": "binary/octet-stream"}
        if method == "HEAD":
            return 200, {**base, "Content-Length": str(file.virtual_size)}, b""
        header_end = len(file.content)  # bytes [0, header_end) are the real header
        spec = headers.get("range")
        if spec is None:
            return self._refuse_weights(method, raw_path, headers, "a GET without Range reads the whole file")
        start, end = self._parse_range(spec, file.virtual_size)
        if end >= max(header_end, _HEADER_PROBE_BYTES):
            return self._refuse_weights(method, raw_path, headers, f"Range {spec} reaches into tensor data")
        body = file.content[start : end + 1]
        body += b"\0" * (end + 1 - start - len(body))
        return 206, {**base, "Content-Range": f"bytes {start}-{end}/{file.virtual_size}"}, body

    def _refuse_weights(self, method: str, raw_path: str, headers: dict, why: str) -> tuple[int, dict, bytes]:
        with self._lock:
            self.weights_downloads.append((method, raw_path, headers))
        raise _Reply(403, None, f"HubStandIn refuses to serve tensor data: {why}")

    @staticmethod
    def _parse_range(spec: str, size: int) -> tuple[int, int]:
        unit, _, ranges = spec.partition("=")
        first = ranges.split(",")[0].strip()
        if unit.strip().lower() != "bytes" or "-" not in first:
            raise _Reply(416, None, f"Unsupported Range {spec!r}", {"Content-Range": f"bytes */{size}"})
        lo, hi = first.split("-", 1)
        if lo == "":  # suffix range: the last N bytes
            start, end = max(size - int(hi), 0), size - 1
        else:
            start, end = int(lo), min(int(hi), size - 1) if hi else size - 1
        if start >= size or start > end:
            raise _Reply(416, None, f"Range {spec!r} not satisfiable", {"Content-Range": f"bytes */{size}"})
        return start, end

    def _serve_api(self, rest: str, headers: dict, url: str) -> tuple[int, dict, bytes]:
        revision = "main"
        if "/safetensors-metadata/" in rest:
            repo_id, filename = rest.split("/safetensors-metadata/", 1)
            repo = self._get_repo(repo_id, url)
            self._check_access(repo, headers)
            if repo.index is None or filename != "model.safetensors.index.json":
                raise _Reply(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": repo.commit})
            payload = {"index": {"metadata": repo.index["metadata"]}, "headers": repo.headers}
            return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()
        if "/revision/" in rest:
            rest, revision = rest.split("/revision/", 1)
        repo = self._get_repo(rest.rstrip("/"), url)
        self._check_revision(repo, revision)
        # Like huggingface.co: a gated repo's model info is public; only its files need a token with access.
        config = repo.config or {}
        info: dict[str, object] = {
            "_id": repo.commit[:24],
            "id": repo.repo_id,
            "modelId": repo.repo_id,
            "author": repo.repo_id.split("/")[0] if "/" in repo.repo_id else None,
            "sha": repo.commit,
            "lastModified": "2025-01-01T00:00:00.000Z",
            "createdAt": "2025-01-01T00:00:00.000Z",
            "private": False,
            "disabled": False,
            "gated": "manual" if repo.gated else False,
            "downloads": 0,
            "likes": 0,
            "library_name": "transformers",
            "pipeline_tag": repo.pipeline_tag,
            "tags": [
                t for t in ("transformers", "safetensors" if repo.parameters else None, config.get("model_type")) if t
            ]
            + ([repo.pipeline_tag] if repo.pipeline_tag else []),
            "config": {k: config[k] for k in ("architectures", "model_type") if k in config},
            "siblings": [{"rfilename": name} for name in sorted(repo.files)],
            "usedStorage": sum(f.size for f in repo.files.values()),
        }
        if repo.parameters:
            info["safetensors"] = {"parameters": dict(repo.parameters), "total": sum(repo.parameters.values())}
        return 200, {"Content-Type": "application/json"}, json.dumps(info).encode()
