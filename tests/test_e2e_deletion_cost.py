"""The e2e scale-in step's own parts, offline: its metrics double (what the annotator scrapes in place of each
engine) and the pods as the ReplicaSet controller compares them. The step itself runs under `./run e2e`."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from components.cache_annotator.cache_value import Selector, counter_value
from e2e import deletion_cost


def _get(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode())


def test_the_double_serves_counters_growing_at_each_pods_rate_and_holds_a_silent_one() -> None:
    double = deletion_cost.MetricsDouble("vllm:prefix_cache_hits_total")
    try:
        double.set_rates({"fast": 1000.0, "slow": 10.0})
        time.sleep(0.5)
        selector = Selector.parse("vllm:prefix_cache_hits_total")
        fast = counter_value(_get(double.url.format(name="fast")), selector)
        slow = counter_value(_get(double.url.format(name="slow")), selector)
        assert fast is not None and slow is not None and fast > 40 * max(slow, 1)
        double.silent.add("slow")
        started = time.monotonic()
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            _get(double.url.format(name="slow"), timeout=0.5)
        assert time.monotonic() - started < 2  # it never answers: the client's timeout ends it
    finally:
        double.close()


def _pod(name: str, uid: str, ready: str, created: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": uid, "creationTimestamp": created},
        "spec": {"nodeName": node},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ready}]},
    }


def test_live_pods_as_the_controller_compares_them() -> None:
    pods = [
        _pod("a", "u1", "2026-12-04T10:00:00Z", "2026-12-04T09:59:00Z", "n1"),
        _pod("b", "u2", "2026-12-04T10:00:00Z", "2026-12-04T09:59:30Z", "n1"),
        _pod("c", "u3", "2026-12-04T10:00:00Z", "2026-12-04T09:59:30Z", "n2"),
    ]
    found = {c.name: c for c in deletion_cost.candidates(pods)}
    assert (found["a"].colocated, found["c"].colocated) == (2, 1)
    assert found["a"].age_s - found["a"].ready_s == pytest.approx(60, abs=1)
    assert found["b"].uid == "u2" and found["a"].cost == 0
