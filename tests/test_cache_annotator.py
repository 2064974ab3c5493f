"""The cache annotator's script (components/cache_annotator/), offline: its counters read from the engines' own
exposition (the recorded fixtures), its window, one loop against a fake API server and fake pods, and what it
survives: a pod that never answers, an API server that is away, writes that fail; every loop bounded in pods and
time."""

from __future__ import annotations

import dataclasses
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from components.cache_annotator.annotate_pods import Annotator, ApiError, Settings, http_fetch, serving
from components.cache_annotator.cache_value import Selector, Window, counter_value
from components.formulas.victims import DELETION_COST_ANNOTATION, LOWEST_COST

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"
ENV = {
    "NAMESPACE": "llm-d",
    "SELECTOR": "llm-d.ai/guide=tiered-prefix-cache",
    "HBM_COUNTER": "vllm:prefix_cache_hits_total",
    "TIER_COUNTER": "vllm:external_prefix_cache_hits_total",
    "SERVERS_PORT": "8000",
    "INTERVAL_SECONDS": "15",
    "WINDOW_SECONDS": "60",
    "SCRAPE_TIMEOUT_SECONDS": "5",
    "MAX_PODS": "4",
    "KUBERNETES_SERVICE_HOST": "10.0.0.1",
}


def test_vllm_counters_read_from_a_recorded_scrape() -> None:
    text = (FIXTURES / "vllm-native-working.txt").read_text()
    assert counter_value(text, Selector.parse("vllm:prefix_cache_hits_total")) == 18432.0
    assert counter_value(text, Selector.parse("vllm:external_prefix_cache_hits_total")) == 0.0
    assert counter_value(text, Selector.parse("vllm:prefix_cache_hits")) is None  # a prefix of a name is not it
    assert counter_value(text, Selector.parse("sglang:cached_tokens_total")) is None


def test_sglang_counters_by_cache_source() -> None:
    text = (FIXTURES / "sglang-working.txt").read_text()
    device = Selector.parse('sglang:cached_tokens_total{cache_source="device"}')
    host = Selector.parse('sglang:cached_tokens_total{cache_source="host"}')
    assert (counter_value(text, device), counter_value(text, host)) == (18000.0, 0.0)
    assert counter_value(text, Selector.parse("sglang:cached_tokens_total")) == 18000.0  # every source, summed


def test_samples_of_every_engine_are_summed_and_labels_matched() -> None:
    text = "\n".join(
        [
            "# TYPE x_total counter",
            'x_total{engine="0",model_name="m"} 10',
            'x_total{engine="1",model_name="m"} 5.5',
            'x_total{engine="1",model_name="other"} 100',
            "x_total_created 1.7e9",
            "x_totalish 3",
        ]
    )
    assert counter_value(text, Selector.parse("x_total")) == 115.5
    assert counter_value(text, Selector.parse('x_total{model_name="m"}')) == 15.5
    assert counter_value(text, Selector.parse('x_total{model_name="m", engine="1"}')) == 5.5
    assert counter_value(text, Selector.parse('x_total{model_name="none"}')) is None


@pytest.mark.parametrize("bad", ["", "1abc", "x{a=b}", 'x{a="b"', "x y"])
def test_a_bad_selector_is_refused_with_what_was_given(bad: str) -> None:
    with pytest.raises(ValueError, match="selector"):
        Selector.parse(bad)


def test_the_window_counts_increases_and_counter_restarts() -> None:
    w = Window(60)
    for at, value in ((0, 100), (15, 150), (30, 170)):
        w.add(at, value)
    assert w.increase() == 70
    w.add(45, 20)  # the engine restarted: its counter counts from zero again
    assert w.increase() == 90
    w.add(75, 50)  # now 0 s falls out (15 s stays, at the window's start)
    assert w.increase() == 20 + 20 + 30
    w.add(200, 50)  # one sample before and one after a gap: the increase across it
    assert w.increase() == 0


def _settings(**overrides: str) -> Settings:
    return Settings.from_env({**ENV, **overrides})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"INTERVAL_SECONDS": "4"}, "SCRAPE_TIMEOUT_SECONDS < INTERVAL_SECONDS"),
        ({"WINDOW_SECONDS": "10"}, "INTERVAL_SECONDS <= WINDOW_SECONDS"),
        ({"MAX_PODS": "0"}, "MAX_PODS"),
        ({"KUBERNETES_SERVICE_HOST": ""}, "API server's address"),
        ({"HBM_COUNTER": "not a selector"}, "selector"),
    ],
)
def test_bad_settings_are_refused_in_one_line(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _settings(**overrides)


def test_settings_from_a_pod_environment() -> None:
    s = _settings()
    assert s.api_url == "https://10.0.0.1:443" and s.token_file.endswith("serviceaccount/token")
    assert s.tier_counter == Selector("vllm:external_prefix_cache_hits_total")
    assert _settings(TIER_COUNTER="").tier_counter is None


def _pod(name: str, ip: str, ready: bool = True, cost: str | None = None, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if cost is not None:
        meta["annotations"] = {DELETION_COST_ANNOTATION: cost}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-04T00:00:00Z"
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    status = {"phase": "Running", "podIP": ip, "conditions": [condition]}
    return {"metadata": meta, "status": status}


class FakeApi:
    """The API server's two calls: a pod list, and patches recorded (or refused, as told)."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods, self.down, self.refuse = pods, False, 0
        self.patches: list[tuple[str, int]] = []

    def list_pods(self, timeout: float) -> list[dict[str, Any]]:
        if self.down:
            raise ApiError("GET /api/v1/namespaces/llm-d/pods: [Errno 111] Connection refused")
        return self.pods

    def set_cost(self, name: str, cost: int, timeout: float) -> None:
        if self.refuse:
            self.refuse -= 1
            raise ApiError("PATCH: HTTP 503 Service Unavailable", 503)
        self.patches.append((name, cost))
        for pod in self.pods:
            if pod["metadata"]["name"] == name:
                pod["metadata"].setdefault("annotations", {})[DELETION_COST_ANNOTATION] = str(cost)


def _scrape(hbm: float, tier: float) -> str:
    return (
        f'vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {hbm}\n'
        f'vllm:external_prefix_cache_hits_total{{engine="0",model_name="m"}} {tier}\n'
    )


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _annotator(api: FakeApi, counters: dict[str, tuple[float, float] | None], **settings: str) -> Annotator:
    clock = Clock()

    def fetch(url: str, timeout: float, most: int) -> str:
        ip = url.split("//")[1].split(":")[0]
        found = counters[ip]
        if found is None:
            raise TimeoutError("timed out")  # an OSError: the pod does not answer
        return _scrape(*found)

    return Annotator(_settings(**settings), api, fetch, clock, clock.sleep)  # type: ignore[arg-type]


def test_one_loop_ranks_by_the_window_and_writes_only_what_changed() -> None:
    api = FakeApi([_pod("a", "10.0.0.1"), _pod("b", "10.0.0.2"), _pod("c", "10.0.0.3", cost="0")])
    counters: dict[str, tuple[float, float] | None] = {"10.0.0.1": (100, 0), "10.0.0.2": (100, 0), "10.0.0.3": (0, 0)}
    annotator = _annotator(api, counters)
    first = annotator.one_loop()
    assert first.costs == {"a": 0, "b": 0, "c": 0}  # one sample each: no increase yet, all tie
    assert api.patches == [("a", 0), ("b", 0)]  # c already carries 0
    annotator.clock.now += 15  # type: ignore[attr-defined]
    counters.update({"10.0.0.1": (5100, 300), "10.0.0.2": (600, 0), "10.0.0.3": (2000, 2000)})
    second = annotator.one_loop()
    assert second.values == {"a": 5300.0, "b": 500.0, "c": 4000.0}
    assert second.costs == {"a": 2, "b": 0, "c": 1}
    assert api.patches[2:] == [("a", 2), ("c", 1)] and second.synced
    annotator.clock.now += 15  # type: ignore[attr-defined]
    counters.update({"10.0.0.1": (5200, 300), "10.0.0.2": (700, 0), "10.0.0.3": (2100, 2000)})
    third = annotator.one_loop()
    assert third.written == 0 and third.costs == second.costs  # the order held: no write


def test_a_pod_that_never_answers_gets_the_lowest_cost_and_the_rest_go_on() -> None:
    api = FakeApi([_pod("a", "10.0.0.1"), _pod("silent", "10.0.0.9")])
    annotator = _annotator(api, {"10.0.0.1": (10, 0), "10.0.0.9": None})
    result = annotator.one_loop()
    assert result.costs == {"a": 0, "silent": LOWEST_COST}
    assert dict(api.patches) == {"a": 0, "silent": LOWEST_COST}
    assert "1 not answering (silent)" in result.line()
    text = annotator.metrics.text()
    assert "cache_annotator_scrape_failures_total 1" in text and "cache_annotator_unanswered_pods 1" in text


def test_an_ipv6_pod_is_scraped_at_its_bracketed_address() -> None:
    seen: list[str] = []
    api = FakeApi([_pod("a", "fd00::1")])

    def fetch(url: str, timeout: float, most: int) -> str:
        seen.append(url)
        return _scrape(1, 0)

    Annotator(_settings(), api, fetch).one_loop()  # type: ignore[arg-type]
    assert seen == ["http://[fd00::1]:8000/metrics"]


def test_a_scrape_without_the_counter_counts_as_no_answer() -> None:
    api = FakeApi([_pod("a", "10.0.0.1")])
    annotator = _annotator(api, {"10.0.0.1": (1, 1)}, HBM_COUNTER="sglang:cached_tokens_total")
    assert annotator.one_loop().costs == {"a": LOWEST_COST}


def test_only_serving_pods_are_read_and_at_most_max_pods() -> None:
    pods = [
        _pod("unready", "10.0.0.1", ready=False),
        _pod("leaving", "10.0.0.2", deleting=True),
        {"metadata": {"name": "pending"}, "status": {"phase": "Pending"}},
        *(_pod(f"p{i}", f"10.0.1.{i}") for i in range(6)),
    ]
    assert [serving(p) for p in pods[:3]] == [False, False, False]
    api = FakeApi(pods)
    annotator = _annotator(api, {f"10.0.1.{i}": (i, 0) for i in range(6)}, MAX_PODS="4")
    result = annotator.one_loop()
    assert sorted(result.costs) == ["p0", "p1", "p2", "p3"] and result.beyond == 2
    assert "2 pods beyond MAX_PODS left out" in result.line()


def test_the_api_server_away_fails_a_loop_and_the_next_one_recovers() -> None:
    api = FakeApi([_pod("a", "10.0.0.1")])
    annotator = _annotator(api, {"10.0.0.1": (10, 0)})
    api.down = True
    failed = annotator.one_loop()
    assert not failed.listed and not failed.synced and "Connection refused" in failed.line()
    assert "cache_annotator_list_failures_total 1" in annotator.metrics.text()
    assert "cache_annotator_last_sync_timestamp_seconds" not in annotator.metrics.text()
    api.down = False
    recovered = annotator.one_loop()
    assert recovered.synced and api.patches == [("a", 0)]
    assert "cache_annotator_last_sync_timestamp_seconds" in annotator.metrics.text()


def test_a_failed_write_is_retried_with_backoff_then_left_for_the_next_loop() -> None:
    api = FakeApi([_pod("a", "10.0.0.1")])
    annotator = _annotator(api, {"10.0.0.1": (10, 0)})
    api.refuse = 2  # two refusals, then accepted: within one loop
    started = annotator.clock.now  # type: ignore[attr-defined]
    result = annotator.one_loop()
    assert result.written == 1 and result.retries == 2 and api.patches == [("a", 0)]
    assert annotator.clock.now - started == 0.5 + 1.0  # type: ignore[attr-defined]
    api.pods[0]["metadata"]["annotations"] = {}
    api.refuse = 10  # refused every attempt: counted, not raised; the loop ends
    failed = annotator.one_loop()
    assert failed.failed == ["a"] and not failed.synced and failed.retries == 2
    assert "cache_annotator_write_failures_total 1" in annotator.metrics.text()
    api.refuse = 0
    assert annotator.one_loop().synced  # the next loop writes it


def test_a_pod_deleted_since_the_list_is_no_failure() -> None:
    api = FakeApi([_pod("a", "10.0.0.1")])
    annotator = _annotator(api, {"10.0.0.1": (10, 0)})

    def gone(name: str, cost: int, timeout: float) -> None:
        raise ApiError("PATCH: HTTP 404 Not Found", 404)

    api.set_cost = gone  # type: ignore[method-assign]
    result = annotator.one_loop()
    assert result.failed == [] and result.synced


def test_an_exception_of_a_loop_is_logged_and_the_next_loop_runs() -> None:
    api = FakeApi([_pod("a", "10.0.0.1")])
    annotator = _annotator(api, {"10.0.0.1": (10, 0)})
    calls = {"n": 0}
    real = annotator.one_loop

    def flaky() -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyError("podIP")
        if calls["n"] == 3:
            annotator.stopping.set()
        return real()

    annotator.one_loop = flaky  # type: ignore[method-assign]
    lines: list[str] = []
    annotator.run(lines.append)
    assert calls["n"] == 3 and lines[0] == "loop 0: KeyError: 'podIP'"
    assert "cache_annotator_errors_total 1" in annotator.metrics.text()


def test_a_pod_that_accepts_and_never_answers_costs_one_scrape_timeout() -> None:
    """Real sockets and threads: a listener that never replies holds its scrape to the timeout, not the loop."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]

    class Answers:
        def __call__(self, url: str, timeout: float, most: int) -> str:
            if "never" in url:
                return http_fetch(url.replace("never", "127.0.0.1"), timeout, most)
            return _scrape(10, 0)

    api = FakeApi([_pod("a", "10.0.0.1"), _pod("b", "never")])
    settings = _settings(SCRAPE_TIMEOUT_SECONDS="1", INTERVAL_SECONDS="3", WINDOW_SECONDS="3")
    settings = dataclasses.replace(settings, servers_port=port)
    annotator = Annotator(settings, api, Answers())  # type: ignore[arg-type]
    try:
        started = time.monotonic()
        result = annotator.one_loop()
        seconds = time.monotonic() - started
    finally:
        silent.close()
    assert result.costs == {"a": 0, "b": LOWEST_COST}
    assert 0.9 < seconds < 2.5, seconds  # the scrape's timeout, within the 3 s interval


def test_the_metrics_page_serves_what_the_alert_reads() -> None:
    from components.exporters.prometheus_text import serve_metrics

    api = FakeApi([_pod("a", "10.0.0.1")])
    annotator = _annotator(api, {"10.0.0.1": (10, 0)})
    annotator.one_loop()
    server = serve_metrics(annotator.metrics, 0)
    try:
        page = http_fetch(f"http://127.0.0.1:{server.server_address[1]}/metrics", 5, 2**20)
    finally:
        server.shutdown()
    assert "# TYPE cache_annotator_last_sync_timestamp_seconds gauge" in page
    assert "cache_annotator_writes_total 1" in page
