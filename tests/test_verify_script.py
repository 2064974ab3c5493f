"""The verification script, run offline: against recorded metric text, and end to end against fake servers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from components.specs.connectors import IMPLEMENTATIONS
from components.verification import verify_offload as verify

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"


def _metrics(name: str) -> dict[str, float]:
    return verify.parse_metrics((FIXTURES / name).read_text())


def test_every_connector_names_a_gate_of_the_script() -> None:
    """The connector names its gate once (`verification_check`); the script, which imports nothing of ours,
    defines them."""
    checks = {c.key: c.verification_check for c in IMPLEMENTATIONS}
    assert set(checks.values()) == set(verify.GATES)
    assert (checks["native"], checks["sglang-hicache"], checks["lmcache-connector"]) == ("native", "sglang", "external")


def test_parse_sums_samples_over_label_sets() -> None:
    metrics = _metrics("sglang-working.txt")
    assert metrics["sglang:hicache_host_used_tokens"] == 4096.0
    assert _metrics("vllm-native-working.txt")["vllm:kv_offload_store_bytes_total"] == 536870912.0


@pytest.mark.parametrize(
    ("check", "working", "broken", "message"),
    [
        ("native", "vllm-native-working.txt", "vllm-native-broken.txt", "the connector is not active"),
        ("sglang", "sglang-working.txt", "sglang-broken.txt", "HiCache is not active"),
        ("external", "vllm-native-working.txt", "vllm-connector-inactive.txt", "the connector is not active"),
    ],
)
def test_gate_passes_on_a_working_server_and_fails_as_the_seed_says(
    check: str, working: str, broken: str, message: str
) -> None:
    # Summed over every pod, as the seed's gate does: one pod that offloaded is enough.
    assert verify.gate(check, {"a": _metrics(working), "b": _metrics(broken)}).startswith(verify.GATES[check][0])
    with pytest.raises(verify.VerificationError, match=message):
        verify.gate(check, {"a": _metrics(broken), "b": _metrics(broken)})


def test_native_failure_message_is_the_seeds() -> None:
    with pytest.raises(verify.VerificationError) as caught:
        verify.gate("native", {"a": _metrics("vllm-native-broken.txt")})
    assert str(caught.value) == "no KV-cache blocks were written to the offload tier: the connector is not active"


def test_model_mismatch_prints_the_right_model() -> None:
    body = json.dumps({"data": [{"id": "Qwen/Qwen3-8B"}]})
    with pytest.raises(
        verify.VerificationError,
        match=r"^MODEL=Qwen/Qwen3-32B does not match the served model: export MODEL=Qwen/Qwen3-8B$",
    ):
        verify.served_model_matches("Qwen/Qwen3-32B", body)


class _FakeServer:
    """A model server (and router) on loopback: /v1/models, /v1/completions, /metrics."""

    def __init__(
        self, model: str, metrics: str, shares_hits: bool = False, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.model, self.metrics, self.completions = model, metrics, 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, code: int, body: str) -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._send(200, json.dumps({"data": [{"id": fake.model}]}))
                elif self.path == "/metrics":
                    hits = 1024 if shares_hits and fake.completions else 0
                    self._send(200, fake.metrics + f'vllm:external_prefix_cache_hits_total{{engine="0"}} {hits}\n')
                else:
                    self._send(404, "")

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                fake.completions += 1
                self._send(200, json.dumps({"choices": [{"text": "ok"}]}))

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"{host!s}:{port}"


@pytest.fixture
def servers() -> Iterator[list[_FakeServer]]:
    started: list[_FakeServer] = []
    yield started
    for server in started:
        server.httpd.shutdown()


def _settings(router: _FakeServer, pods: list[_FakeServer], **overrides: str) -> verify.Settings:
    env = {
        "MODEL": "Qwen/Qwen3-32B",
        "ROUTER_URL": f"http://{router.address}",
        "ENDPOINTS": ",".join(p.address.split(":")[0] for p in pods),
        "PORT": pods[0].address.split(":")[1],
        "WAIT_SECONDS": "2",
        "SETTLE_SECONDS": "0",
        **overrides,
    }
    return verify.Settings.from_env(env)


def test_end_to_end_passes_against_a_working_server(servers: list[_FakeServer]) -> None:
    pod = _FakeServer("Qwen/Qwen3-32B", (FIXTURES / "vllm-native-working.txt").read_text())
    router = _FakeServer("Qwen/Qwen3-32B", "")
    servers += [pod, router]
    log: list[str] = []
    verify.run(_settings(router, [pod]), log=log.append)
    assert router.completions == 10
    assert "model servers serve: Qwen/Qwen3-32B" in log
    assert any(line.startswith("vllm:kv_offload_store_bytes_total") for line in log)


def test_end_to_end_fails_against_a_broken_server(servers: list[_FakeServer]) -> None:
    pod = _FakeServer("Qwen/Qwen3-32B", (FIXTURES / "vllm-native-broken.txt").read_text())
    router = _FakeServer("Qwen/Qwen3-32B", "")
    servers += [pod, router]
    with pytest.raises(verify.VerificationError, match="the connector is not active"):
        verify.run(_settings(router, [pod]), log=lambda _: None)


def test_shared_tier_check_with_one_pod_is_skipped_as_the_seed_does(servers: list[_FakeServer]) -> None:
    pod = _FakeServer("Qwen/Qwen3-32B", (FIXTURES / "vllm-native-working.txt").read_text())
    router = _FakeServer("Qwen/Qwen3-32B", "")
    servers += [pod, router]
    log: list[str] = []
    verify.run(_settings(router, [pod], SHARED_TIER="true"), log=log.append)
    assert "needs at least 2 model server pods, found 1: skipping the shared-tier check" in log


@pytest.mark.parametrize(("shares", "passes"), [(True, True), (False, False)])
def test_shared_tier_check_across_two_pods(servers: list[_FakeServer], shares: bool, passes: bool) -> None:
    """Two pods on one port, on two loopback addresses: the second must load what the first wrote."""
    working = (FIXTURES / "vllm-native-working.txt").read_text()
    first = _FakeServer("Qwen/Qwen3-32B", working)
    second = _FakeServer(
        "Qwen/Qwen3-32B", working, shares_hits=shares, host="127.0.0.2", port=first.httpd.server_address[1]
    )
    router = _FakeServer("Qwen/Qwen3-32B", "")
    servers += [first, second, router]
    settings = _settings(router, [first, second], SHARED_TIER="true")
    if passes:
        verify.run(settings, log=lambda _: None)
        assert second.completions == 1
    else:
        with pytest.raises(verify.VerificationError, match="the shared filesystem tier is not shared"):
            verify.run(settings, log=lambda _: None)
