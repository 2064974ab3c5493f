"""Monitors, alert rules (parsed with a real PromQL parser), the dashboard, and the verification Job."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import promql_parser
import pytest

from components.cache_annotator.annotate_pods import Metrics as AnnotatorMetrics
from components.specs import verification
from components.tier_evictor.evict_tier import Metrics
from stacks.config import loading
from stacks.planning.plan import plan
from tests import engine_contracts
from tests.helpers import SEEDS, by_kind, manifests, rendered, validate, with_gmp_project

PRESETS = loading.preset_names()
ON = ("monitoring.enabled=true",)
SEED_TEXT = "\n".join(p.read_text() for p in sorted(SEEDS.glob("*.txt")))
# Metrics the seeds do not spell out, each the other half of a ratio they do name.
COMPANIONS = {"vllm:prefix_cache_queries_total": "denominator of the HBM hit rate (vllm:prefix_cache_hits_total)"}


# The program's own exporters: the shared tier's evictor (components/tier_evictor/evict_tier.py `Metrics`) and the
# cache annotator (components/cache_annotator/annotate_pods.py `Metrics`).
OWN_METRICS = {
    *Metrics().counters,
    "tier_evictor_usage_ratio",
    "tier_evictor_high_watermark_ratio",
    *AnnotatorMetrics().counters,
    "cache_annotator_last_sync_timestamp_seconds",
}


def named_by_the_seeds(metric: str) -> bool:
    if metric in OWN_METRICS:
        return True
    base = metric.removesuffix("_bucket")  # a histogram the seeds name by its family
    # The seed greps SGLang metrics as `sglang[:_](hicache_host_used_tokens|evicted_tokens_total|...)`.
    return base in SEED_TEXT or (base.startswith("sglang:") and base.split(":", 1)[1] in SEED_TEXT)


def exported(metric: str) -> bool:
    """A metric something the stack runs exports: an engine's (`vllm:`, `sglang:`, `lmcache:`) by the names its
    pinned wheel defines (tests/engine_contracts.py `engine_metrics`, not the seed text: a connector may alert on
    any metric its engine has), any other (the router's, Mooncake's) as the seeds name it, or the program's own."""
    engine = engine_contracts.engine_of_metric(metric)
    if engine is not None:
        return engine_contracts.metric_defined(metric, engine_contracts.engine_metrics(engine))
    return named_by_the_seeds(metric)


def metric_names(expr: str) -> set[str]:
    """Every metric an expression selects, from the parsed syntax tree (not from the text)."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            names.add(node.name)
        for attr in ("lhs", "rhs", "expr", "vector_selector", "param"):
            child = getattr(node, attr, None)
            if child is not None and not isinstance(child, (str, int, float)):
                walk(child)
        for arg in getattr(node, "args", None) or []:
            walk(arg)

    walk(promql_parser.parse(expr))
    return names


def _exprs(objects: list[dict[str, Any]]) -> list[str]:
    out = [rule["expr"] for r in by_kind(objects, "PrometheusRule") for g in r["spec"]["groups"] for rule in g["rules"]]
    for config_map in by_kind(objects, "ConfigMap"):
        if config_map["metadata"].get("labels", {}).get("grafana_dashboard") == "1":
            board = json.loads(next(iter(config_map["data"].values())))
            out += [t["expr"] for panel in board["panels"] for t in panel["targets"]]
    return out


@pytest.mark.parametrize("name", PRESETS)
def test_monitoring_renders_monitors_rules_and_dashboard(name: str) -> None:
    objects = manifests(rendered(name, ON))
    assert by_kind(objects, "PodMonitor")
    [rule] = by_kind(objects, "PrometheusRule")
    assert rule["spec"]["groups"][0]["rules"]
    assert any(c["metadata"].get("labels", {}).get("grafana_dashboard") == "1" for c in by_kind(objects, "ConfigMap"))


@pytest.mark.parametrize("name", PRESETS)
def test_every_rule_and_panel_is_valid_promql_over_metrics_the_stack_exports(name: str) -> None:
    exprs = _exprs(manifests(rendered(name, ON)))
    assert exprs
    for expr in exprs:
        names = metric_names(expr)  # raises on invalid PromQL
        assert names, expr
        for metric in names:
            assert exported(metric) or metric in COMPANIONS, f"{metric} is not a metric the stack exports"


def test_an_engine_metric_is_read_from_its_engine_and_any_other_from_the_seeds() -> None:
    assert exported("vllm:kv_offload_stores_skipped_total")  # vLLM defines it; no seed names it
    assert not named_by_the_seeds("vllm:kv_offload_stores_skipped_total")
    assert not exported("vllm:kv_offload_store_byte_total")  # a typo of one the seeds name
    assert exported("sglang:hicache_host_used_tokens") and exported("lmcache:retrieve_hit_rate")
    assert exported("llm_d_epp_prefix_indexer_hit_ratio")  # the router's, as the seeds name it
    assert not exported("llm_d_epp_prefix_indexer_hit_ratios")


def test_the_parser_rejects_broken_promql() -> None:
    with pytest.raises(ValueError):
        metric_names("sum(rate(vllm:kv_offload_store_bytes_total[5m]) by")


def test_rules_follow_what_the_servers_export() -> None:
    def names(preset: str) -> set[str]:
        objects = manifests(rendered(preset, ON))
        return {r["alert"] for r in by_kind(objects, "PrometheusRule")[0]["spec"]["groups"][0]["rules"]}

    native = names("gpu-vllm-native-cpu")
    assert {"TieredCacheStoreAllocationFailures", "TieredCacheStoresWithoutLoads", "TieredCacheLoadTooSlow"} <= native
    assert "TieredCacheRouterCPUIndexAhead" in native
    assert names("gpu-sglang-native-cpu") >= {"HiCacheHostTierUnused", "HiCacheHostTierFullWithoutHits"}
    assert "LMCacheHitRateNearZero" in names("gpu-vllm-lmcache-connector-cpu")
    assert "TieredCacheStoreAllocationFailures" not in names("tpu-v6-vllm-native-cpu")  # no kv_offload_* on TPU
    assert "TieredCacheRouterCPUIndexAhead" not in names("gpu-vllm-lmcache-server")  # token scoring, no CPU index


def test_thresholds_are_configurable() -> None:
    objects = manifests(rendered("gpu-vllm-native-cpu", (*ON, "monitoring.alerts.offload_hit_rate_floor=0.05")))
    rules = {r["alert"]: r for r in by_kind(objects, "PrometheusRule")[0]["spec"]["groups"][0]["rules"]}
    assert "< 0.05 and on (pod)" in rules["TieredCacheOffloadHitRateNearZero"]["expr"]
    assert rules["TieredCacheOffloadHitRateNearZero"]["annotations"]["runbook"]


def test_gke_uses_pod_monitorings_and_mooncake_gets_its_service_monitor() -> None:
    gke = manifests(rendered("gpu-vllm-native-cpu-gke", (*ON, "monitoring.provider=gke-managed-prometheus")))
    assert by_kind(gke, "PodMonitoring") and not by_kind(gke, "PodMonitor")
    mooncake = manifests(rendered("gpu-vllm-mooncake-store-cpu", ON))
    [monitor] = by_kind(mooncake, "ServiceMonitor")
    assert monitor["metadata"]["namespace"] == "mooncake"
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    lmcache = manifests(rendered("gpu-vllm-lmcache-server", ON))
    assert {m["metadata"]["name"] for m in by_kind(lmcache, "PodMonitor")} == {"decode", "lmcache-engine"}


@pytest.mark.parametrize("name", PRESETS)
def test_gke_managed_prometheus_gets_the_same_alert_rules_as_gmp_rules(name: str) -> None:
    """GMP evaluates `Rules` (monitoring.googleapis.com/v1), not PrometheusRule: the same rules, validated
    against GMP's CRD (tests/fixtures/upstream/schemas/gke-managed-prometheus)."""
    # (an autoscaled preset on an existing cluster names the project whose Managed Prometheus KEDA reads)
    gmp = manifests(rendered(name, with_gmp_project(name, (*ON, "monitoring.provider=gke-managed-prometheus"))))
    [prometheus_rule] = by_kind(manifests(rendered(name, ON)), "PrometheusRule")
    [rules] = by_kind(gmp, "Rules")
    assert not by_kind(gmp, "PrometheusRule")
    assert rules["apiVersion"] == "monitoring.googleapis.com/v1"
    validate(rules)
    flatten = [r for g in rules["spec"]["groups"] for r in g["rules"]]
    assert flatten == [r for g in prometheus_rule["spec"]["groups"] for r in g["rules"]]


# --- the verification Job ------------------------------------------------------------------------

VERIFY = ("verification.enabled=true",)


def _job_env(name: str) -> dict[str, str]:
    [job] = [j for j in by_kind(manifests(rendered(name, VERIFY)), "Job") if j["metadata"]["name"] == "verify-offload"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container["env"]}


def test_verification_job_is_on_by_default_in_dev_and_checks_what_the_connector_exports() -> None:
    assert plan(loading.load_named("dev")).manifests(verification.WORKLOAD)
    assert not plan(loading.load_preset("gpu-vllm-native-cpu")).manifests(verification.WORKLOAD)
    assert _job_env("gpu-vllm-native-cpu")["CHECK"] == "native"
    assert _job_env("gpu-vllm-native-fs")["SHARED_TIER"] == "true"
    assert _job_env("gpu-sglang-native-cpu")["CHECK"] == "sglang"
    assert _job_env("tpu-v6-vllm-native-cpu")["CHECK"] == "external"
    env = _job_env("gpu-vllm-native-cpu")
    assert env["MODEL"] == "Qwen/Qwen3-32B"
    assert env["ROUTER_URL"] == "http://tiered-prefix-cache-epp.llm-d-tiered-prefix-cache.svc.cluster.local:80"
    assert env["SELECTOR"] == "llm-d.ai/guide=tiered-prefix-cache"


def test_verification_job_runs_the_projects_script_with_a_pinned_image() -> None:
    objects = manifests(rendered("dev"))
    [job] = by_kind(objects, "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert re.fullmatch(r"docker\.io/library/python:\d+\.\d+\.\d+-slim", container["image"])
    script = next(c for c in by_kind(objects, "ConfigMap") if c["metadata"]["name"] == "verify-offload-script")
    source = Path(__file__).resolve().parents[1] / "components" / "verification" / "verify_offload.py"
    assert script["data"]["verify_offload.py"] == source.read_text()
