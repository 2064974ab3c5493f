"""Verify a deployed tiered prefix cache, as the seed's "Verification" section does by hand.

1. The served model matches the configured one.
2. A burst of requests sharing a ~2k-token prefix goes through the router.
3. The offload counters of every serving pod show the connector at work.
4. With a shared filesystem tier and two or more pods: a prefix written by one pod is loaded by another.

Runs in the verification Job with only the Python standard library. Configuration comes from the
environment (see `Settings.from_env`). Exit status 0: verified; 1: a check failed (the reason on stderr).
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
BURST_SENTENCE = "Evicted KV-cache blocks move to CPU RAM and are loaded back instead of recomputed. "
SHARED_SENTENCE = "The shared filesystem tier lets every replica reuse KV-cache blocks written by another. "
PREFIX_REPEATS = 100  # ~2k tokens
SHOWN = (
    "vllm:kv_offload_store_bytes_total",
    "vllm:kv_offload_load_bytes_total",
    "vllm:external_prefix_cache_hits_total",
    "vllm:external_prefix_cache_queries_total",
    "lmcache:local_cache_usage",
    "lmcache:retrieve_hit_rate",
    "sglang:hicache_host_used_tokens",
    "sglang:evicted_tokens_total",
    "sglang:load_back_tokens_total",
    "sglang:cached_tokens_total",
)
# What shows the connector at work, per check, and the seed's message when it does not.
GATES = {
    "native": (
        "vllm:kv_offload_store_bytes_total",
        "no KV-cache blocks were written to the offload tier: the connector is not active",
    ),
    "sglang": (
        "sglang:hicache_host_used_tokens",
        "the HiCache host tier holds no tokens: HiCache is not active (check the --hicache-* flags)",
    ),
    "external": (
        "vllm:external_prefix_cache_queries_total",
        "no prompt tokens were looked up in the offload tier: the connector is not active",
    ),
}


class VerificationError(Exception):
    pass


@dataclass(frozen=True)
class Settings:
    model: str
    router_url: str
    check: str  # a key of GATES
    shared_tier: bool
    requests: int
    port: int
    namespace: str
    selector: str
    endpoints: tuple[str, ...]  # pod IPs; empty: discover through the Kubernetes API
    wait_seconds: float
    settle_seconds: float

    @staticmethod
    def from_env(env: dict[str, str]) -> Settings:
        return Settings(
            model=env["MODEL"],
            router_url=env["ROUTER_URL"].rstrip("/"),
            check=env.get("CHECK", "native"),
            shared_tier=env.get("SHARED_TIER", "false") == "true",
            requests=int(env.get("REQUESTS", "10")),
            port=int(env.get("PORT", "8000")),
            namespace=env.get("NAMESPACE", ""),
            selector=env.get("SELECTOR", ""),
            endpoints=tuple(e for e in env.get("ENDPOINTS", "").split(",") if e),
            wait_seconds=float(env.get("WAIT_SECONDS", "600")),
            settle_seconds=float(env.get("SETTLE_SECONDS", "10")),
        )


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format -> the sum of each metric's samples over all label sets."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_and_labels, _, rest = line.partition(" ") if "{" not in line else line.partition("} ")
        name = name_and_labels.split("{", 1)[0]
        try:
            value = float(rest.split()[0])
        except (IndexError, ValueError):
            continue
        totals[name] = totals.get(name, 0.0) + value
    return totals


def shown_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(SHOWN)]


def gate(check: str, metrics_by_pod: dict[str, dict[str, float]]) -> str:
    """The seed's gate: the counter, summed over every serving pod, must be above zero."""
    metric, failure = GATES[check]
    total = sum(metrics.get(metric, 0.0) for metrics in metrics_by_pod.values())
    if not total > 0:
        raise VerificationError(failure)
    return f"{metric} (all pods): {total:g}"


def served_model_matches(expected: str, models_json: str) -> str:
    data = json.loads(models_json).get("data") or [{}]
    served = str(data[0].get("id", ""))
    if served != expected:
        raise VerificationError(f"MODEL={expected} does not match the served model: export MODEL={served}")
    return served


Fetch = Callable[[str, bytes | None], tuple[int, str]]


def http_fetch(url: str, body: bytes | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as error:
        return 0, str(error)


def discover_pods(settings: Settings) -> list[str]:
    """Serving pods through the API server: Running, with an IP, and (LeaderWorkerSet) leaders only."""
    if settings.endpoints:
        return list(settings.endpoints)
    with open(f"{SA_DIR}/token") as token_file:
        token = token_file.read()
    context = ssl.create_default_context(cafile=f"{SA_DIR}/ca.crt")
    query = urllib.parse.urlencode({"labelSelector": settings.selector})
    request = urllib.request.Request(
        f"https://kubernetes.default.svc/api/v1/namespaces/{settings.namespace}/pods?{query}",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        pods = json.load(response)["items"]
    out = []
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        index = pod["metadata"].get("labels", {}).get("leaderworkerset.sigs.k8s.io/worker-index")
        if pod["status"].get("phase") == "Running" and pod["status"].get("podIP") and index in (None, "0"):
            out.append(pod["status"]["podIP"])
    return out


def completion(model: str, prompt: str, max_tokens: int) -> bytes:
    return json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens}).encode()


def run(settings: Settings, fetch: Fetch = http_fetch, log: Callable[[str], None] = print) -> None:
    deadline = time.monotonic() + settings.wait_seconds
    pods: list[str] = []
    while not pods:
        pods = discover_pods(settings)
        if not pods and time.monotonic() > deadline:
            raise VerificationError(f"no serving model-server pod matches {settings.selector!r}")
        if not pods:
            time.sleep(5)
    base = [f"http://{ip}:{settings.port}" for ip in pods]

    status, body = fetch(f"{base[0]}/v1/models", None)
    while status != 200 and time.monotonic() < deadline:
        time.sleep(5)
        status, body = fetch(f"{base[0]}/v1/models", None)
    if status != 200:
        raise VerificationError(f"{base[0]}/v1/models answered HTTP {status}: {body[:200]}")
    log(f"model servers serve: {served_model_matches(settings.model, body)}")

    prefix = BURST_SENTENCE * PREFIX_REPEATS
    for i in range(1, settings.requests + 1):
        prompt = f"{prefix} Question {i}: what is llm-d?"
        status, body = fetch(f"{settings.router_url}/v1/completions", completion(settings.model, prompt, 16))
        log(f"request {i}: HTTP {status}")
        if status != 200:
            raise VerificationError(f"the router answered HTTP {status}: {body[:200]}")

    metrics_by_pod: dict[str, dict[str, float]] = {}
    for url in base:
        status, text = fetch(f"{url}/metrics", None)
        log(f"== {url}")
        for line in shown_lines(text):
            log(line)
        metrics_by_pod[url] = parse_metrics(text)
    log(gate(settings.check, metrics_by_pod))

    if settings.shared_tier:
        if len(base) < 2:
            log(f"needs at least 2 model server pods, found {len(base)}: skipping the shared-tier check")
            return
        shared = SHARED_SENTENCE * PREFIX_REPEATS
        for url in base[:2]:
            status, _ = fetch(f"{url}/v1/completions", completion(settings.model, shared, 1))
            log(f"{url}: HTTP {status}")
            time.sleep(settings.settle_seconds)
        hits = parse_metrics(fetch(f"{base[1]}/metrics", None)[1]).get("vllm:external_prefix_cache_hits_total", 0.0)
        log(f"vllm:external_prefix_cache_hits_total on the second pod: {hits:g}")
        if not hits > 0:
            raise VerificationError(
                "the second pod did not load the prefix the first wrote: the shared filesystem tier is not shared"
            )


def main() -> int:
    try:
        run(Settings.from_env(dict(os.environ)))
    except VerificationError as failure:
        print(f"verification failed: {failure}", file=sys.stderr)
        return 1
    print("verified: the model servers offload KV-cache blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
