"""The model-cache fetch script, run offline against a fake Hugging Face Hub on loopback."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from components.model_fetch import fetch_model as fetch

MODEL = "Qwen/Qwen3-0.6B"
COMMIT = "c1899de289a04d12100db370d81485cdf75e47ca"


def _files() -> dict[str, bytes]:
    return {
        "config.json": b'{"architectures": ["Qwen3ForCausalLM"]}',
        "model-00001-of-00002.safetensors": bytes(range(256)) * 4096,  # 1 MiB
        "model-00002-of-00002.safetensors": hashlib.sha256(b"x").digest() * 10000,
        "tokenizer/tokenizer.json": b"{}",
    }


class FakeHub:
    """The two Hub endpoints the script uses: the revision's file list, and `resolve` (via a CDN redirect)."""

    def __init__(self) -> None:
        self.files = _files()
        self.resolves: list[tuple[str, str | None]] = []  # (path, Range header)
        self.bytes_served = 0
        self.tokens: list[str | None] = []
        self.ignore_range = False
        self.cut_after: int | None = None  # serve this many bytes of the next body, then drop the connection
        self.status = 200
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                hub.tokens.append(self.headers.get("Authorization"))
                if hub.status != 200:
                    self._send(hub.status, b"{}")
                elif self.path == f"/api/models/{MODEL}/revision/main?blobs=true":
                    siblings = [{"rfilename": name, "size": len(data)} for name, data in hub.files.items()]
                    self._send(200, json.dumps({"sha": COMMIT, "siblings": siblings}).encode())
                elif self.path.startswith(f"/{MODEL}/resolve/{COMMIT}/"):
                    name = self.path.removeprefix(f"/{MODEL}/resolve/{COMMIT}/")
                    self.send_response(302)
                    self.send_header("Location", f"/cdn/{name}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path.startswith("/cdn/"):
                    self._serve_file(self.path.removeprefix("/cdn/"))
                else:
                    self._send(404, b"")

            def _serve_file(self, name: str) -> None:
                data, span = hub.files[name], self.headers.get("Range")
                hub.resolves.append((name, span))
                start = int(span.removeprefix("bytes=").rstrip("-")) if span and not hub.ignore_range else 0
                body = data[start:]
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if hub.cut_after is not None:
                    body, hub.cut_after = body[: hub.cut_after], None
                    self.close_connection = True
                hub.bytes_served += len(body)  # before the write: the client may read the count once it has the bytes
                self.wfile.write(body)

            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    server = FakeHub()
    yield server
    server.httpd.shutdown()


def _settings(hub: FakeHub, root: Path, **overrides: str) -> fetch.Settings:
    env = {
        "HF_ENDPOINT": hub.url,
        "MODEL": MODEL,
        "CACHE_ROOT": str(root),
        "TARGET": str(root / "models" / MODEL),
        "HF_TOKEN": "hf_test",
        "ATTEMPTS": "2",
        **overrides,
    }
    return fetch.Settings.from_env(env)


def _assert_complete(hub: FakeHub, target: Path) -> None:
    for name, data in hub.files.items():
        assert (target / name).read_bytes() == data
    assert not list(target.rglob("*.part"))


def test_first_run_fetches_every_file_with_the_token(hub: FakeHub, tmp_path: Path) -> None:
    settings = _settings(hub, tmp_path)
    fetched = fetch.run(settings, log=lambda _: None)
    assert fetched == sum(len(d) for d in hub.files.values())
    _assert_complete(hub, settings.target)
    assert set(hub.tokens) == {"Bearer hf_test"}
    marker = json.loads((settings.target / fetch.MARKER).read_text())
    assert marker["revision"] == COMMIT
    assert marker["files"]["config.json"] == len(hub.files["config.json"])


def test_second_run_fetches_nothing(hub: FakeHub, tmp_path: Path) -> None:
    settings = _settings(hub, tmp_path)
    fetch.run(settings, log=lambda _: None)
    hub.resolves.clear()
    served = hub.bytes_served
    assert fetch.run(settings, log=lambda _: None) == 0
    assert hub.resolves == []
    assert hub.bytes_served == served
    _assert_complete(hub, settings.target)


def test_a_partial_file_resumes_from_where_it_stopped(hub: FakeHub, tmp_path: Path) -> None:
    settings = _settings(hub, tmp_path)
    name = "model-00001-of-00002.safetensors"
    part = settings.target / f"{name}.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(hub.files[name][:1000])
    fetch.run(settings, log=lambda _: None)
    assert (name, "bytes=1000-") in hub.resolves
    _assert_complete(hub, settings.target)


def test_a_dropped_connection_is_resumed_in_the_same_run(hub: FakeHub, tmp_path: Path) -> None:
    settings = _settings(hub, tmp_path, WORKERS="1")
    hub.files = {"model.safetensors": bytes(range(256)) * 1024}
    hub.cut_after = 5000
    fetch.run(settings, log=lambda _: None)
    assert hub.resolves == [("model.safetensors", None), ("model.safetensors", "bytes=5000-")]
    _assert_complete(hub, settings.target)


def test_a_server_that_ignores_ranges_still_yields_whole_files(hub: FakeHub, tmp_path: Path) -> None:
    settings = _settings(hub, tmp_path)
    name = "config.json"
    (settings.target).mkdir(parents=True)
    (settings.target / f"{name}.part").write_bytes(b"garbage")
    hub.ignore_range = True
    fetch.run(settings, log=lambda _: None)
    _assert_complete(hub, settings.target)


def test_a_changed_file_is_fetched_again_and_only_it(hub: FakeHub, tmp_path: Path) -> None:
    settings = _settings(hub, tmp_path)
    fetch.run(settings, log=lambda _: None)
    hub.resolves.clear()
    hub.files["config.json"] = b'{"architectures": ["Qwen3ForCausalLM"], "torch_dtype": "bfloat16"}'
    fetch.run(settings, log=lambda _: None)
    assert [path for path, _ in hub.resolves] == ["config.json"]
    _assert_complete(hub, settings.target)


def test_a_gated_model_says_to_check_the_token(hub: FakeHub, tmp_path: Path) -> None:
    hub.status = 401
    with pytest.raises(fetch.FetchError, match=r"HTTP 401 \(a gated model: is the HF token set and accepted\?\)"):
        fetch.run(_settings(hub, tmp_path), log=lambda _: None)


def test_a_path_leaving_the_model_directory_is_refused(hub: FakeHub, tmp_path: Path) -> None:
    hub.files = {"../../etc/evil": b"x"}
    with pytest.raises(fetch.FetchError, match=r"refusing the repository path '\.\./\.\./etc/evil'"):
        fetch.run(_settings(hub, tmp_path), log=lambda _: None)
    assert not (tmp_path / "etc").exists()


def test_prepares_readable_weights_and_writable_caches_under_the_root_only(hub: FakeHub, tmp_path: Path) -> None:
    root = tmp_path / "volume"
    root.mkdir(mode=0o700)
    compile_dir = root / "compile-cache" / "gpu" / "vllm" / "Qwen3-0.6B"
    settings = _settings(hub, root, WRITABLE_DIRS=f"{compile_dir}:{root / 'kv-cache'}")
    fetch.run(settings, log=lambda _: None)
    assert (root.stat().st_mode & 0o777) == 0o700  # the volume's root is left alone
    for directory in (root / "models", root / "models" / "Qwen", settings.target):
        assert (directory.stat().st_mode & 0o777) == 0o755
    assert (compile_dir.stat().st_mode & 0o777) == 0o777
    assert ((root / "kv-cache").stat().st_mode & 0o777) == 0o777


def test_directories_outside_the_root_are_refused(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(fetch.FetchError, match="is not under CACHE_ROOT"):
        fetch.run(_settings(hub, tmp_path / "volume", TARGET=str(tmp_path / "elsewhere")), log=lambda _: None)
