"""`autoscaling.scale_in: cache-value` as planned and rendered: the annotator, its Role and NetworkPolicies, the
drain and its grace on every model server, the refusals, the counters read per connector, and the policy rule
that refuses an annotator with wider rights (a hand-edited render trips it)."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import pytest

from components.catalog import labels
from components.formulas.drain import PRE_STOP_SECONDS, TEARDOWN_SECONDS, drain
from components.formulas.load_costs import LoadCosts
from components.formulas.serving_time import EngineCosts
from components.manifest import Manifest
from components.specs import cache_annotator, metric_family
from policies.resources import Resource
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning import scale_in
from stacks.planning.plan import plan
from stacks.planning.resolution import resolve
from tests.policy_cases import RULE, recorded, violations_of

PRESET = "gpu-vllm-native-fs-autoscale"  # the preset that autoscales, with scale_in: cache-value
RBAC = "kubernetes:rbac.authorization.k8s.io/v1"


def _objects(name: str, *overrides: str) -> list[Manifest]:
    stack_plan = plan(loading.load_preset(name, list(overrides)))
    return [m for w in stack_plan.workloads.values() for m in w.manifests]


def _server(objects: list[Manifest]) -> Manifest:
    return next(o for o in objects if o["kind"] == "Deployment" and "llm-d.ai/kv-transfer-block-tokens" in str(o))


def test_the_default_renders_no_annotator_and_no_drain() -> None:
    objects = _objects(PRESET, "autoscaling.scale_in=newest")
    assert not [o for o in objects if o["metadata"]["name"].startswith(cache_annotator.NAME)]
    pod = _server(objects)["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 130  # the guide's, as before
    assert "lifecycle" not in pod["containers"][0]
    assert not [a for a in pod["containers"][0]["args"] if a.startswith("--shutdown-timeout")]


def test_cache_value_renders_the_annotator_with_only_its_rights() -> None:
    objects = _objects(PRESET)
    mine = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["metadata"]["name"].startswith("cache-annot")}
    assert sorted(mine) == [
        ("ConfigMap", "cache-annotator-script"),
        ("Deployment", "cache-annotator"),
        ("NetworkPolicy", "cache-annotator-egress"),
        ("NetworkPolicy", "cache-annotator-ingress"),
        ("Role", "cache-annotator"),
        ("RoleBinding", "cache-annotator"),
        ("ServiceAccount", "cache-annotator"),
    ]
    assert mine[("Role", "cache-annotator")]["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "patch"]}
    ]
    assert not [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    pod = mine[("Deployment", "cache-annotator")]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "cache-annotator" and pod["automountServiceAccountToken"] is True
    tokens = [
        o["metadata"]["name"]
        for o in objects
        if o["kind"] in ("Deployment", "DaemonSet", "Job")
        and o["spec"]["template"]["spec"]["automountServiceAccountToken"]
    ]
    assert tokens == ["cache-annotator"]  # the only pod of the stack that mounts a token
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    # The HPA's sync period, the derived scale-down window (2 x the 644 s cold start), 2 x 8 replicas' pods.
    assert (env["INTERVAL_SECONDS"], env["WINDOW_SECONDS"], env["MAX_PODS"]) == ("15", "1288", "16")
    assert env["SELECTOR"] == "llm-d.ai/guide=tiered-prefix-cache"
    assert (env["HBM_COUNTER"], env["TIER_COUNTER"]) == (
        "vllm:prefix_cache_hits_total",
        "vllm:external_prefix_cache_hits_total",
    )
    script = mine[("ConfigMap", "cache-annotator-script")]["data"]
    assert sorted(script) == ["annotate_pods.py", "cache_value.py", "prometheus_text.py", "victims.py"]


def test_its_egress_reaches_the_servers_metrics_port_and_the_api_server_only() -> None:
    objects = _objects(PRESET)
    egress = next(o for o in objects if o["metadata"]["name"] == "cache-annotator-egress")["spec"]
    assert egress["policyTypes"] == ["Egress"]
    assert egress["egress"] == [
        {
            "ports": [{"protocol": "TCP", "port": 8000}],
            "to": [{"podSelector": {"matchLabels": {"llm-d.ai/guide": "tiered-prefix-cache"}}}],
        },
        {"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]},
    ]
    server = next(o for o in objects if o["metadata"]["name"] == "gpu-vllm-decode-ingress")["spec"]["ingress"]
    admitted = [r for r in server if "cache-annotator" in str(r)]
    assert [r["ports"] for r in admitted] == [[{"protocol": "TCP", "port": 8000}]]


def test_every_model_server_drains_for_the_derived_figure() -> None:
    stack_plan = plan(loading.load_preset(PRESET))
    assert stack_plan.scale_in is not None
    d = stack_plan.scale_in.drain
    pod = _server([m for w in stack_plan.workloads.values() for m in w.manifests])["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert f"--shutdown-timeout={d.shutdown_timeout_s}" in container["args"]
    assert container["lifecycle"] == {"preStop": {"exec": {"command": ["/bin/sleep", "15"]}}}
    assert pod["terminationGracePeriodSeconds"] == 15 + d.shutdown_timeout_s + 15
    # Qwen3-32B on 2 H100s: its 40,960-token context, the pool as the HBM budget sizes it.
    assert (d.max_model_len, d.max_seqs) == (40_960, 1024)
    assert d.shutdown_timeout_s == math.ceil(d.prefill_s + 40_960 * d.step_s)


COSTS = EngineCosts(
    gemm_s_per_token=1e-5,
    attention_s_per_pair=1e-9,
    weights_read_s=0.01,
    kv_read_s_per_token=1e-7,
    load=LoadCosts(0.0, 0.0),
    max_batched_tokens=8192,
    max_seqs=256,
    kv_tokens=100_000,
)


def test_the_drain_formula_by_hand() -> None:
    d = drain(COSTS, 1000, "test")
    # A step: max(256 x 1e-5 + 100,000 x 1e-9, 0.01 + 100,000 x 1e-7) = max(0.00266, 0.02) = 0.02 s.
    assert d.step_s == pytest.approx(0.02)
    # The prompt alone: 1,000 x 1e-5 + 1,000^2 / 2 x 1e-9 = 0.0105 s.
    assert d.prefill_s == pytest.approx(0.0105)
    assert d.longest_request_s == pytest.approx(20.0105)
    assert (d.shutdown_timeout_s, d.grace_s) == (21, PRE_STOP_SECONDS + 21 + TEARDOWN_SECONDS)
    assert d.formula() == (
        "15 s preStop + ceil(0.0 s prefill of 1,000 tokens + 1,000 x 20.00 ms step) + 15 s teardown = 51 s"
    )


def test_the_drain_rounds_up_to_whole_seconds_on_both_sides_of_one() -> None:
    memory_bound = dataclasses.replace(COSTS, gemm_s_per_token=0.0, attention_s_per_pair=0.0, kv_read_s_per_token=0.0)
    assert drain(dataclasses.replace(memory_bound, weights_read_s=0.0009), 1000, "").shutdown_timeout_s == 1  # 0.9 s
    assert drain(dataclasses.replace(memory_bound, weights_read_s=0.0011), 1000, "").shutdown_timeout_s == 2  # 1.1 s
    assert drain(dataclasses.replace(memory_bound, weights_read_s=0.0), 1000, "").shutdown_timeout_s == 1  # never 0


def test_scale_in_without_autoscaling_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"autoscaling.scale_in .*applies only with autoscaling.enabled true"):
        loading.load_preset("gpu-vllm-native-fs", ["autoscaling.scale_in=cache-value"])


def _resolved(**server_changes: Any) -> tuple[Any, ...]:
    stack_plan = plan(loading.load_preset(PRESET))
    stack = resolve(stack_plan.config)
    decode = dataclasses.replace(stack_plan.model_server, **server_changes)
    exports = stack.connector.exports(stack.choice, "tiered")
    return stack, decode, stack_plan.hbm, stack_plan.autoscaling, exports


def test_a_leader_worker_set_is_refused() -> None:
    stack, decode, hbm, auto, exports = _resolved(host_type="multi-host")
    with pytest.raises(ConfigError) as refused:
        scale_in.resolve(stack, decode, hbm, auto, exports)
    assert str(refused.value) == (
        "invalid stack config: autoscaling.scale_in = 'cache-value': a LeaderWorkerSet scales in from its highest"
        " group index, whatever its pods' deletion costs; allowed: newest"
    )


def test_a_connector_without_a_hit_token_counter_is_refused_in_one_line() -> None:
    stack, decode, hbm, auto, exports = _resolved()
    without = tuple(dataclasses.replace(f, cache_value=None) for f in exports)
    with pytest.raises(ConfigError) as refused:
        scale_in.resolve(stack, decode, hbm, auto, without)
    assert str(refused.value) == (
        "invalid stack config: autoscaling.scale_in = 'cache-value': connector native exports no counter of the"
        " prompt tokens its pods served from their caches (its metric families: vllm, vllm-offload,"
        " router-cpu-index); allowed: newest"
    )
    assert "\n" not in str(refused.value)


# Per connector, the counters the annotator reads: HBM's, and the tier's only where the tier goes with the pod.
COUNTERS = {
    "native": ("vllm:prefix_cache_hits_total", "vllm:external_prefix_cache_hits_total"),
    "lmcache-connector": ("vllm:prefix_cache_hits_total", "vllm:external_prefix_cache_hits_total"),
    "tpu-offload": ("vllm:prefix_cache_hits_total", "vllm:external_prefix_cache_hits_total"),
    "mooncake-store": ("vllm:prefix_cache_hits_total", None),  # one pool of every pod's segments
    "lmcache-server": ("vllm:prefix_cache_hits_total", None),  # the node's L1, held by the per-node daemon
    "sglang-hicache": (
        'sglang:cached_tokens_total{cache_source="device"}',
        'sglang:cached_tokens_total{cache_source="host"}',
    ),
}


def test_each_connector_names_the_counters_it_is_read_by() -> None:
    seen: dict[str, tuple[str, str | None]] = {}
    for name in loading.preset_names():
        stack = resolve(loading.load_preset(name))
        counters = metric_family.cache_value(stack.connector.exports(stack.choice, "tiered"))
        assert counters is not None, name
        tier = counters.tier if stack.connector.cpu_scope == "replica" else None
        seen[stack.connector.key] = (counters.hbm, tier)
    assert seen == COUNTERS


def _annotator_resources() -> list[Resource]:
    return recorded(PRESET)


def _role(resources: list[Resource]) -> Resource:
    return next(r for r in resources if r.type == f"{RBAC}:Role" and r.props["metadata"]["name"] == "cache-annotator")


def _binding(resources: list[Resource]) -> Resource:
    return next(r for r in resources if r.type == f"{RBAC}:RoleBinding" and r.name.endswith("cache-annotator"))


def _rule(resources: list[Resource]) -> list[str]:
    return violations_of(RULE["annotator-least-privilege"], resources)


def test_the_rendered_annotator_passes_its_rule() -> None:
    assert _rule(_annotator_resources()) == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("delete", "grants ['delete'] on pods, bound to the cache annotator's account cache-annotator"),
        ("wildcard", "grants ['*'] on pods"),
        ("secrets", "grants ['get', 'list', 'patch'] on ['']/['pods', 'secrets']"),
        ("exec", "grants ['get', 'list', 'patch'] on ['']/['pods/exec']"),
        ("cluster-role", "binds the cache annotator's account cache-annotator to ClusterRole cache-annotator"),
        ("cluster-binding", "binds the cache annotator's account cache-annotator cluster-wide (edit)"),
    ],
)
def test_a_hand_edited_render_trips_the_rule(edit: str, message: str) -> None:
    resources = _annotator_resources()
    rule = _role(resources).props["rules"][0]
    if edit == "delete":
        rule["verbs"] = [*rule["verbs"], "delete"]
    elif edit == "wildcard":
        rule["verbs"] = ["*"]
    elif edit == "secrets":
        rule["resources"] = ["pods", "secrets"]
    elif edit == "exec":
        rule["resources"] = ["pods/exec"]
    elif edit == "cluster-role":
        _binding(resources).props["roleRef"]["kind"] = "ClusterRole"
    else:
        binding = copy.deepcopy(_binding(resources).props)
        binding["metadata"].pop("namespace")
        binding["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
        resources.append(Resource(f"{RBAC}:ClusterRoleBinding", "everywhere", binding))
    found = _rule(resources)
    assert len(found) == 1 and found[0].startswith(message), found
    verbs = ", ".join(labels.CACHE_ANNOTATOR_POD_VERBS)
    assert found[0].endswith(f"it may hold {verbs} on the pods of its own namespace")


def test_a_binding_to_an_undeclared_role_trips_the_rule() -> None:
    resources = _annotator_resources()
    _binding(resources).props["roleRef"]["name"] = "somebody-elses"
    assert _rule(resources) == [
        "binds the cache annotator's account cache-annotator to Role somebody-elses, which the stack does not declare"
    ]
