"""Write each model-server pod's cache value as its `controller.kubernetes.io/pod-deletion-cost`, so a scale-in removes
the pod whose caches served least (components/formulas/victims.py). Stdlib only, run by the cache annotator's
Deployment (components/specs/cache_annotator.py); configured by the environment.

Every interval, one loop:
1. lists the model-server pods of its namespace (its Role: get, list and patch on pods there, nothing else);
2. reads each ready pod's `/metrics` at once (a thread each, at most `MAX_WORKERS`), each with its timeout: the
   prompt tokens served from HBM and from the pod's own CPU tier (the counters its connector exports,
   cache_value.py), increased over the window;
3. ranks the values (`deletion_costs`: the dense rank, so a cost changes only when the order does; a pod that does
   not answer, or answers without the counter, gets the lowest cost);
4. patches each pod whose annotation differs, retrying a failed write with backoff.

What it promises: every loop bounded in pods (`MAX_PODS`, the most the workloads can run) and in time (it ends by
the next interval: every request gets what is left of it); a failure (the API server away, a pod that never
answers, a write refused) is counted, logged and met again next loop, never the end of the process. SIGTERM ends
the loop after the current step.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from components.cache_annotator.cache_value import Selector, Window, counter_value
from components.exporters.prometheus_text import Exposition, serve_metrics
from components.formulas.victims import DELETION_COST_ANNOTATION, deletion_costs

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
MAX_RESPONSE_BYTES = 64 * 2**20  # an API server's answer read no further (a list of at most MAX_PODS pods)
WRITE_ATTEMPTS = 3
WRITE_BACKOFF_S = 0.5  # doubled after each failed attempt

Fetch = Callable[[str, float, int], str]  # (url, timeout, most bytes) -> the body; OSError when it does not answer


class ApiError(Exception):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status, 0 where none came back


@dataclass(frozen=True)
class Settings:
    namespace: str
    selector: str  # the model-server pods' label selector
    hbm_counter: Selector
    tier_counter: Selector | None  # None: the connector's tier outlives the pod (pooled), or it has none
    servers_port: int  # where the model servers serve /metrics
    interval_s: float
    window_s: float
    scrape_timeout_s: float
    max_pods: int
    metrics_port: int  # its own /metrics
    api_url: str
    token_file: str
    ca_file: str
    metrics_url: str = "http://{ip}:{port}/metrics"  # a pod's /metrics ({ip}, {port}, {name})
    max_workers: int = 32  # scrapes at once
    max_scrape_bytes: int = 4 * 2**20  # a scrape read no further

    @staticmethod
    def from_env(env: dict[str, str]) -> Settings:
        get = env.get
        host, port = get("KUBERNETES_SERVICE_HOST", ""), get("KUBERNETES_SERVICE_PORT", "443")
        tier = get("TIER_COUNTER", "")
        settings = Settings(
            namespace=env["NAMESPACE"],
            selector=env["SELECTOR"],
            hbm_counter=Selector.parse(env["HBM_COUNTER"]),
            tier_counter=Selector.parse(tier) if tier else None,
            servers_port=int(env["SERVERS_PORT"]),
            interval_s=float(env["INTERVAL_SECONDS"]),
            window_s=float(env["WINDOW_SECONDS"]),
            scrape_timeout_s=float(env["SCRAPE_TIMEOUT_SECONDS"]),
            max_pods=int(env["MAX_PODS"]),
            metrics_port=int(get("METRICS_PORT", "9401")),
            api_url=get("API_URL") or f"https://{host}:{port}",
            token_file=get("TOKEN_FILE", f"{SA_DIR}/token"),
            ca_file=get("CA_FILE", f"{SA_DIR}/ca.crt"),
            metrics_url=get("METRICS_URL", "http://{ip}:{port}/metrics"),
            max_workers=int(get("MAX_WORKERS", "32")),
            max_scrape_bytes=int(get("MAX_SCRAPE_BYTES", str(4 * 2**20))),
        )
        if problem := settings.problem():
            raise ValueError(problem)
        return settings

    def problem(self) -> str | None:
        if not self.namespace or not self.selector:
            return "NAMESPACE and SELECTOR must name the model-server pods"
        if not 0 < self.scrape_timeout_s < self.interval_s <= self.window_s:
            return (
                "need 0 < SCRAPE_TIMEOUT_SECONDS < INTERVAL_SECONDS <= WINDOW_SECONDS, got"
                f" {self.scrape_timeout_s:g}, {self.interval_s:g}, {self.window_s:g}"
            )
        if min(self.max_pods, self.max_workers, self.max_scrape_bytes) < 1:
            got = f"{self.max_pods}, {self.max_workers}, {self.max_scrape_bytes}"
            return f"MAX_PODS, MAX_WORKERS, MAX_SCRAPE_BYTES must be positive, got {got}"
        if urllib.parse.urlsplit(self.api_url).scheme not in ("http", "https") or self.api_url.endswith("://:443"):
            where = "in a pod: KUBERNETES_SERVICE_HOST"
            return f"the API server's address must be an http(s) URL ({where}), got {self.api_url!r}"
        return None


class KubeApi:
    """The two calls it makes, over the API server's REST interface with its service account's token (read at
    each call: the kubelet rotates a projected token)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.context = (
            ssl.create_default_context(cafile=settings.ca_file) if settings.api_url.startswith("https") else None
        )

    def _call(self, method: str, path: str, timeout: float, body: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            with open(self.settings.token_file) as f:
                token = f.read().strip()
        except OSError as error:
            raise ApiError(f"reading the token: {error}") from None
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/merge-patch+json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(self.settings.api_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=max(timeout, 0.1)) as response:
                return dict(json.loads(response.read(MAX_RESPONSE_BYTES)))
        except urllib.error.HTTPError as error:
            raise ApiError(f"{method} {path.split('?')[0]}: HTTP {error.code} {error.reason}", error.code) from None
        except (OSError, ValueError) as error:  # refused, reset, timed out, TLS, not JSON
            raise ApiError(f"{method} {path.split('?')[0]}: {error}") from None

    def list_pods(self, timeout: float) -> list[dict[str, Any]]:
        s = self.settings
        query = urllib.parse.urlencode({"labelSelector": s.selector, "limit": s.max_pods + 1})
        return list(self._call("GET", f"/api/v1/namespaces/{s.namespace}/pods?{query}", timeout).get("items") or [])

    def set_cost(self, name: str, cost: int, timeout: float) -> None:
        patch = {"metadata": {"annotations": {DELETION_COST_ANNOTATION: str(cost)}}}
        self._call("PATCH", f"/api/v1/namespaces/{self.settings.namespace}/pods/{name}", timeout, patch)


def http_fetch(url: str, timeout: float, most: int) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read(most).decode(errors="replace"))


def serving(pod: dict[str, Any]) -> bool:
    """Running, ready, with an address, not being deleted: the pods whose order a scale-in reads."""
    status, meta = pod.get("status") or {}, pod.get("metadata") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return (
        status.get("phase") == "Running" and bool(status.get("podIP")) and ready and not meta.get("deletionTimestamp")
    )


@dataclass
class LoopResult:
    number: int
    listed: bool = False
    pods: int = 0
    beyond: int = 0  # pods past MAX_PODS, left for no loop (the workloads never run so many)
    values: dict[str, float | None] = field(default_factory=dict)
    costs: dict[str, int] = field(default_factory=dict)
    written: int = 0
    retries: int = 0
    failed: list[str] = field(default_factory=list)  # writes that failed every attempt, or ran out of time
    seconds: float = 0.0
    error: str = ""

    @property
    def synced(self) -> bool:
        """Every pod listed carries the cost it should."""
        return self.listed and not self.failed

    def line(self) -> str:
        if not self.listed:
            return f"loop {self.number}: listing the pods failed: {self.error}"
        unanswered = sorted(n for n, v in self.values.items() if v is None)
        silent = f" ({', '.join(unanswered)})" if unanswered else ""
        ranked = ", ".join(f"{n}={self.costs[n]}" for n in sorted(self.costs)) or "none"
        failed = f": {', '.join(self.failed)}" if self.failed else ""
        beyond = f"; {self.beyond} pods beyond MAX_PODS left out" if self.beyond else ""
        return (
            f"loop {self.number}: {self.pods} pods, {len(unanswered)} not answering{silent}; costs {ranked};"
            f" wrote {self.written} ({self.retries} retries, {len(self.failed)} failed{failed}){beyond};"
            f" {self.seconds:.1f} s"
        )


class Annotator:
    def __init__(
        self,
        settings: Settings,
        api: KubeApi | None = None,
        fetch: Fetch = http_fetch,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.settings, self.api, self.fetch, self.clock = settings, api or KubeApi(settings), fetch, clock
        self.stopping = threading.Event()
        self.sleep = sleep or self._wait
        self.windows: dict[str, Window] = {}  # by pod UID: a new pod of the same name starts from nothing
        self.loops = 0
        self.metrics = Metrics()

    def _wait(self, seconds: float) -> None:
        self.stopping.wait(seconds)

    def _value(self, pod: dict[str, Any], at: float, deadline: float) -> float | None:
        """The pod's cache value over the window; None when it does not answer, or without the counter."""
        s = self.settings
        meta = pod["metadata"]
        ip = str(pod["status"]["podIP"])
        host = f"[{ip}]" if ":" in ip else ip  # an IPv6 address in a URL
        url = s.metrics_url.format(ip=host, port=s.servers_port, name=meta["name"])
        try:
            text = self.fetch(url, max(0.1, min(s.scrape_timeout_s, deadline - self.clock())), s.max_scrape_bytes)
        except (OSError, ValueError):  # refused, reset, timed out, an HTTP error status
            return None
        hbm = counter_value(text, s.hbm_counter)
        if hbm is None:
            return None
        tier = counter_value(text, s.tier_counter) if s.tier_counter is not None else 0.0
        window = self.windows.setdefault(str(meta.get("uid") or meta["name"]), Window(s.window_s))
        window.add(at, hbm + (tier or 0.0))
        return window.increase()

    def _values(self, pods: list[dict[str, Any]], deadline: float) -> dict[str, float | None]:
        at = self.clock()
        out: dict[str, float | None] = {p["metadata"]["name"]: None for p in pods}
        if not pods:
            return out
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(len(pods), self.settings.max_workers))
        futures = {pool.submit(self._value, p, at, deadline): p["metadata"]["name"] for p in pods}
        until = min(deadline, at + self.settings.scrape_timeout_s)
        done, _ = concurrent.futures.wait(futures, timeout=max(0.0, until - self.clock()))
        pool.shutdown(wait=False, cancel_futures=True)  # a scrape past its timeout is not waited for
        for future in done:
            out[futures[future]] = future.result()
        return out

    def _write(self, name: str, cost: int, deadline: float, result: LoopResult) -> None:
        backoff = WRITE_BACKOFF_S
        for attempt in range(WRITE_ATTEMPTS):
            left = deadline - self.clock()
            if left <= 0:
                break
            try:
                self.api.set_cost(name, cost, left)
                result.written += 1
                return
            except ApiError as error:
                if error.status == 404:  # deleted since the list: nothing left to write
                    return
                result.error = str(error)
            if attempt + 1 < WRITE_ATTEMPTS and deadline - self.clock() > backoff:
                result.retries += 1
                self.sleep(backoff)
                backoff *= 2
        result.failed.append(name)

    def one_loop(self) -> LoopResult:
        s, started = self.settings, self.clock()
        deadline = started + s.interval_s
        self.loops += 1
        result = LoopResult(self.loops)
        try:
            pods = self.api.list_pods(s.scrape_timeout_s)
        except ApiError as error:
            result.error = str(error)
            result.seconds = self.clock() - started
            self.metrics.record(result)
            return result
        result.listed = True
        ready = sorted((p for p in pods if serving(p)), key=lambda p: p["metadata"]["name"])
        result.beyond = max(0, len(ready) - s.max_pods)
        ready = ready[: s.max_pods]
        result.pods = len(ready)
        result.values = self._values(ready, deadline)
        result.costs = deletion_costs(result.values)
        for pod in ready:
            name = pod["metadata"]["name"]
            annotations = pod["metadata"].get("annotations") or {}
            if annotations.get(DELETION_COST_ANNOTATION) != str(result.costs[name]):
                self._write(name, result.costs[name], deadline, result)
        live = {str(p["metadata"].get("uid") or p["metadata"]["name"]) for p in pods}
        self.windows = {uid: w for uid, w in self.windows.items() if uid in live}
        result.seconds = self.clock() - started
        self.metrics.record(result)
        return result

    def run(self, log: Callable[[str], None]) -> None:
        quiet = 0
        while not self.stopping.is_set():
            started = self.clock()
            try:
                result = self.one_loop()
            except Exception as error:  # a bug's exception is logged and counted, and the next loop runs
                self.metrics.crashed()
                log(f"loop {self.loops}: {type(error).__name__}: {error}")
            else:
                if result.written or result.failed or not result.listed or quiet % 20 == 0:
                    log(result.line())
                quiet = 0 if result.written or result.failed else quiet + 1
            self.sleep(max(0.0, self.settings.interval_s - (self.clock() - started)))


class Metrics(Exposition):
    """The annotator's Prometheus metrics, in the text exposition format; `..._last_sync_timestamp_seconds` is the
    end of the last loop that left every pod with its cost (its alert: components/specs/cache_annotator.py)."""

    COUNTERS = ("loops", "list_failures", "scrape_failures", "writes", "write_retries", "write_failures", "errors")

    def __init__(self) -> None:
        super().__init__("cache_annotator", self.COUNTERS)

    def record(self, result: LoopResult) -> None:
        with self.lock:
            unanswered = sum(1 for v in result.values.values() if v is None)
            self._add(loops=1, list_failures=0 if result.listed else 1, scrape_failures=unanswered)
            self._add(writes=result.written, write_retries=result.retries, write_failures=len(result.failed))
            self._gauge(loop_seconds=result.seconds)
            if result.listed:
                self._gauge(pods=result.pods, unanswered_pods=unanswered)
            if result.synced:
                self._gauge(last_sync_timestamp_seconds=time.time())

    def crashed(self) -> None:
        with self.lock:
            self._add(errors=1)


def main() -> int:
    try:
        settings = Settings.from_env(dict(os.environ))
    except (KeyError, ValueError) as e:
        print(f"cache annotator: bad configuration: {e}", file=sys.stderr)
        return 2
    annotator = Annotator(settings)
    signal.signal(signal.SIGTERM, lambda *_: annotator.stopping.set())
    serve_metrics(annotator.metrics, settings.metrics_port)
    print(f"cache annotator started: {settings}", flush=True)  # every setting, by name (the token is a path)
    annotator.run(lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
