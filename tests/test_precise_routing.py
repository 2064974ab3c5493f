"""Precise prefix routing (`router.prefix_routing: precise`): what the engines publish, what the router indexes, the
connectors refused, the rules that hold the two sides to one block size, hash seed and port, and token-aware scaling's
one derived rate."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from components.catalog import labels
from components.formulas import hpa
from components.formulas.load_costs import LoadCosts
from components.formulas.prefill_rate import peak_prefill_rate
from components.formulas.serving_time import EngineCosts
from components.specs import keda_tokens
from components.specs.connectors import BY_KEY, IMPLEMENTATIONS
from components.specs.payoff_table import Payoff
from components.units import ByteSize
from policies.resources import Resource
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from stacks.planning.precise_routing import DEFAULT_CPU_WEIGHT, cpu_weight
from stacks.planning.workload.routing_weights import picker_config, routing_of
from stacks.review import offline
from tests.policy_cases import RULE, violations_of

PRECISE = "gpu-vllm-native-cpu-precise"
RULES = (
    "kv-events-block-size",
    "kv-events-hash-seed",
    "kv-events-port-per-rank",
    "precise-scorer-publishers",
    "prefill-rate-agrees",
)


def _recorded(name: str, *overrides: str) -> list[Resource]:
    recording = offline.record(plan(loading.load_preset(name, list(overrides))), name)
    return [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]


def _server(resources: list[Resource]) -> dict[str, Any]:
    deployment = next(r for r in resources if r.type == "kubernetes:apps/v1:Deployment" and r.name.endswith("-decode"))
    container: dict[str, Any] = deployment.props["spec"]["template"]["spec"]["containers"][0]
    return container


def _producer(resources: list[Resource]) -> dict[str, Any]:
    chart = next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart" and "router" in r.props["values"])
    config = picker_config(chart.props["values"])
    assert config is not None
    params: dict[str, Any] = next(p for p in config["plugins"] if p["type"] == labels.PRECISE_PRODUCER)["parameters"]
    return params


@pytest.fixture(scope="module")
def precise() -> list[Resource]:
    return _recorded(PRECISE)


# -- the render -------------------------------------------------------------------------------------------------


def test_every_engine_publishes_what_the_router_indexes(precise: list[Resource]) -> None:
    container = _server(precise)
    args = container["args"]
    assert "--block-size=16" in args  # the H100 profile's KV block, stated
    events = json.loads(args[args.index("--kv-events-config") + 1])
    assert events == {
        "enable_kv_cache_events": True,
        "publisher": "zmq",
        "endpoint": "tcp://*:5556",
        "topic": "kv@$(POD_IP):8000@Qwen/Qwen3-32B",
    }
    transfer = json.loads(args[args.index("--kv-transfer-config") + 1])
    assert transfer["kv_connector_extra_config"]["self_describing_kv_events"] is True
    env = {e["name"]: e for e in container["env"]}
    assert env["PYTHONHASHSEED"]["value"] == "42"
    assert env["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert {"name": "kv-events", "containerPort": 5556, "protocol": "TCP"} in container["ports"]
    assert container["image"] == "docker.io/vllm/vllm-openai:v0.27.1"
    producer = _producer(precise)
    assert producer["tokenProcessorConfig"] == {"blockSizeTokens": 16, "hashSeed": "42"}
    assert producer["kvEventsConfig"] == {
        "engineType": "vllm",
        "topicFilter": "kv@",
        "discoverPods": True,
        "podDiscoveryConfig": {"socketPort": 5556},
    }
    assert [b["name"] for b in producer["indexerConfig"]["backendConfigs"]] == ["gpu", "cpu"]


def test_two_endpoint_pickers_route_active_active_with_the_tokenizer_sidecar(precise: list[Resource]) -> None:
    values = next(r for r in precise if r.type == "kubernetes:helm.sh/v4:Chart" and "router" in r.props["values"])
    router = values.props["values"]["router"]
    assert router["epp"]["replicas"] == 2
    assert router["epp"]["flags"]["ha-enable-leader-election"] is False
    assert router["tokenizer"]["enabled"] is True and router["tokenizer"]["modelName"] == "Qwen/Qwen3-32B"
    routing = routing_of(values.props["values"])
    assert routing.precise
    assert not routing_of(_recorded_values("gpu-vllm-native-cpu")).precise


def _recorded_values(name: str) -> dict[str, Any]:
    values: dict[str, Any] = plan(loading.load_preset(name)).router_values
    return values


def test_the_event_port_admits_the_router_and_nobody_else(precise: list[Resource]) -> None:
    policy = next(
        r.props
        for r in precise
        if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and r.name.endswith("decode-ingress")
    )
    by_port: dict[int, list[Any]] = {}
    for rule in policy["spec"]["ingress"]:
        for port in rule.get("ports") or []:
            by_port.setdefault(port["port"], []).append(rule["from"])
    [sources] = by_port[5556]
    assert sources == [{"podSelector": {"matchLabels": {"llm-d-router-gateway": "tiered-prefix-cache-epp"}}}]


def test_approximate_renders_no_events() -> None:
    container = _server(_recorded("gpu-vllm-native-cpu"))
    assert "--kv-events-config" not in container["args"]
    assert not any(a.startswith("--block-size") for a in container["args"])
    assert "PYTHONHASHSEED" not in {e["name"] for e in container["env"]}
    assert [p["containerPort"] for p in container["ports"]] == [8000]


# -- what each connector publishes, and the refusal --------------------------------------------------------------

REFUSED = {  # preset: what the one line names, written out from the records' sources
    "gpu-vllm-native-fs": "cache.connector native: its filesystem tier publishes its stores but not its evictions",
    "gpu-vllm-lmcache-connector-cpu": "cache.connector lmcache-connector: its CPU tier publishes its stores but"
    " not its evictions",
    "gpu-vllm-mooncake-store-cpu": "cache.connector mooncake-store: its CPU tier publishes its stores but not"
    " its evictions",
    "gpu-vllm-lmcache-server": "cache.connector lmcache-server: its CPU tier is one pool every pod loads from",
    "tpu-v6-vllm-native-cpu": "cache.connector tpu-offload: its CPU tier publishes no KV events",
    "gpu-sglang-native-fs": "cache.connector sglang-hicache: its filesystem tier publishes no KV events",
}


@pytest.mark.parametrize("preset", sorted(REFUSED))
def test_a_connector_without_events_for_a_tier_is_refused_in_one_line(preset: str) -> None:
    with pytest.raises(ConfigError) as raised:
        loading.load_preset(preset, ["router.prefix_routing=precise"])
    message = str(raised.value)
    assert "\n" not in message
    assert "router.prefix_routing" in message and REFUSED[preset] in message


@pytest.mark.parametrize("preset", ["gpu-vllm-native-cpu", "gpu-sglang-native-cpu", "amd-vllm-native-cpu"])
def test_connectors_that_report_every_tier_route_precisely(preset: str) -> None:
    stack = plan(loading.load_preset(preset, ["router.prefix_routing=precise"]))
    assert stack.model_server.publisher is not None
    assert stack.model_server.publisher.block_tokens == stack.stack.connector.engine_block(stack.stack.choice)


def test_every_connector_records_hbm_and_cpu_and_the_filesystem_tier_with_fs() -> None:
    for connector in IMPLEMENTATIONS:
        for fs in (False, True):
            tiers = [t.tier for t in connector.kv_events(fs)]
            assert tiers[:2] == ["hbm", "cpu"], connector.key
            assert tiers[2:] in ([], ["fs"]), connector.key
            assert all(t.source for t in connector.kv_events(fs)), connector.key
    assert {k for k, c in BY_KEY.items() if c.precise_refusal(False) is None} == {"native"}


def test_sglang_publishes_on_its_page_size_with_its_own_event_format() -> None:
    stack = plan(loading.load_preset("gpu-sglang-native-cpu", ["router.prefix_routing=precise"]))
    container = next(w for w in stack.workloads.values() if w.server is not None).manifests[-1]["spec"]["template"]
    args = container["spec"]["containers"][0]["args"]
    assert "--page-size=64" in args
    assert json.loads(args[args.index("--kv-events-config") + 1]) == {
        "publisher": "zmq",
        "endpoint": "tcp://*:5556",
        "topic": "kv@$(POD_IP):8000@Qwen/Qwen3-32B",
    }
    config = picker_config(stack.router_values)
    assert config is not None
    index = next(p for p in config["plugins"] if p["type"] == labels.PRECISE_PRODUCER)["parameters"]
    assert index["tokenProcessorConfig"]["blockSizeTokens"] == 64
    assert index["kvEventsConfig"]["engineType"] == "sglang"
    assert [b["name"] for b in index["indexerConfig"]["backendConfigs"]] == ["gpu", "cpu_pinned"]


# -- the CPU medium's weight ----------------------------------------------------------------------------------


def _payoff(break_even: float, bandwidth: float | None) -> Payoff:
    real = plan(loading.load_preset("gpu-vllm-native-cpu")).payoff
    tier = type(real.tiers[0])("CPU tier", bandwidth, "test")
    return type(real)(**{**real.__dict__, "break_even": break_even, "tiers": (tier,)})


def test_the_cpu_weight_is_what_a_hit_there_saves_against_hbm() -> None:
    assert cpu_weight(_payoff(4e9, 80e9))[0] == 0.95  # 1 - 4/80
    assert cpu_weight(_payoff(20e9, 80e9))[0] == 0.75
    assert cpu_weight(_payoff(80e9, 80e9))[0] == 0.0  # reload as slow as recompute: worth nothing
    assert cpu_weight(_payoff(100e9, 80e9))[0] == 0.0  # slower: not negative
    assert cpu_weight(_payoff(4e9, None))[0] == DEFAULT_CPU_WEIGHT


# -- the rules, each tripped by a hand edit --------------------------------------------------------------------


def test_the_precise_render_passes_every_rule(precise: list[Resource]) -> None:
    assert {name: violations_of(RULE[name], precise) for name in RULES} == {name: [] for name in RULES}


def test_a_block_size_the_router_does_not_hash_in_is_refused(precise: list[Resource]) -> None:
    args = _server(precise)["args"]
    args[args.index("--block-size=16")] = "--block-size=32"
    assert violations_of(RULE["kv-events-block-size"], precise) == [
        "the precise index hashes in blocks of 16 tokens, llmd-model-server-gpu-vllm-decode/modelserver publishes"
        " blocks of 32: no request's blocks would match what the pod reports"
    ]
    args.remove("--block-size=32")
    assert violations_of(RULE["kv-events-block-size"], precise) == [
        "llmd-model-server-gpu-vllm-decode/modelserver publishes KV events without stating its block size"
    ]


def test_a_hash_seed_that_differs_or_is_missing_is_refused(precise: list[Resource]) -> None:
    env = _server(precise)["env"]
    seed = next(e for e in env if e["name"] == "PYTHONHASHSEED")
    seed["value"] = "7"
    assert violations_of(RULE["kv-events-hash-seed"], precise) == [
        "the precise index hashes with seed '42', llmd-model-server-gpu-vllm-decode/modelserver with PYTHONHASHSEED=7"
    ]
    env.remove(seed)
    assert violations_of(RULE["kv-events-hash-seed"], precise) == [
        "llmd-model-server-gpu-vllm-decode/modelserver publishes KV events without PYTHONHASHSEED: its block hashes"
        " are seeded at random on every start"
    ]


def test_each_rank_needs_its_own_declared_port_the_router_dials(precise: list[Resource]) -> None:
    container = _server(precise)
    rule = RULE["kv-events-port-per-rank"]
    container["args"].append("--data-parallel-size=2")  # two ranks: 5556 and 5557
    assert violations_of(rule, precise) == [
        "llmd-model-server-gpu-vllm-decode/modelserver publishes KV events on ports [5556, 5557] but declares no [5557]"
    ]
    container["args"].remove("--data-parallel-size=2")
    _producer(precise)["kvEventsConfig"]["podDiscoveryConfig"]["socketPort"] = 5557
    # the chart's values are read from the recorded YAML string: edit that
    chart = next(r for r in precise if r.type == "kubernetes:helm.sh/v4:Chart" and "router" in r.props["values"])
    epp = chart.props["values"]["router"]["epp"]
    if "pluginsCustomConfig" in epp:
        key = epp["pluginsConfigFile"]
        loaded = yaml.safe_load(epp["pluginsCustomConfig"][key])
        next(p for p in loaded["plugins"] if p["type"] == labels.PRECISE_PRODUCER)["parameters"]["kvEventsConfig"][
            "podDiscoveryConfig"
        ]["socketPort"] = 5557
        epp["pluginsCustomConfig"][key] = yaml.safe_dump(loaded)
    assert violations_of(rule, precise) == [
        "the precise index dials port 5557 on each pod, llmd-model-server-gpu-vllm-decode/modelserver publishes on 5556"
    ]


def test_a_precise_index_over_a_pod_that_does_not_publish_is_refused(precise: list[Resource]) -> None:
    rule = RULE["precise-scorer-publishers"]
    container = _server(precise)
    at = container["args"].index("--kv-events-config")
    events = container["args"][at : at + 2]
    del container["args"][at : at + 2]
    assert violations_of(rule, precise) == [
        "the precise index routes to llmd-model-server-gpu-vllm-decode, whose engine publishes no KV events"
    ]
    container["args"] += events
    deployment = next(r for r in precise if r.type == "kubernetes:apps/v1:Deployment" and r.name.endswith("-decode"))
    deployment.props["spec"]["template"]["metadata"]["labels"][labels.KV_CONNECTOR_LABEL] = "lmcache-connector"
    [message] = violations_of(rule, precise)
    assert message.startswith(
        "the precise index routes to llmd-model-server-gpu-vllm-decode: cache.connector lmcache-connector: its CPU tier"
        " publishes its stores but not its evictions"
    )


# -- token-aware scaling -------------------------------------------------------------------------------------------

TOKENS = ("gpu-vllm-native-fs-autoscale", "autoscaling.signal=tokens")


def test_one_derived_rate_in_the_router_filter_and_the_trigger() -> None:
    stack = plan(loading.load_preset(TOKENS[0], [TOKENS[1]]))
    assert stack.autoscaling is not None and stack.autoscaling.prefill_rate is not None
    rate = stack.autoscaling.prefill_rate.whole
    config = picker_config(stack.router_values)
    assert config is not None
    [affinity] = [p for p in config["plugins"] if p["type"] == labels.AFFINITY_FILTER]
    assert affinity["parameters"]["peakPrefillThroughput"] == rate
    assert config["schedulingProfiles"][0]["plugins"][0] == {"pluginRef": labels.AFFINITY_FILTER}
    scaled = [m for w in stack.workloads.values() for m in w.manifests if m["kind"] == "ScaledObject"]
    [backlog] = [t for s in scaled for t in s["spec"]["triggers"] if t["name"] == labels.PREFILL_BACKLOG_TRIGGER]
    assert f"/ {rate})" in backlog["metadata"]["query"]
    assert backlog["metadata"]["threshold"] == "1.5"


def test_a_trigger_dividing_by_another_rate_is_refused() -> None:
    resources = _recorded(*TOKENS[:1], TOKENS[1])
    rule = RULE["prefill-rate-agrees"]
    assert violations_of(rule, resources) == []
    scaled = next(r for r in resources if r.type == "kubernetes:keda.sh/v1alpha1:ScaledObject")
    trigger = next(t for t in scaled.props["spec"]["triggers"] if t["name"] == labels.PREFILL_BACKLOG_TRIGGER)
    query = trigger["metadata"]["query"]
    rate = int(query.split("/ ")[1].split(")")[0])
    trigger["metadata"]["query"] = query.replace(f"/ {rate})", "/ 15928)")
    [message] = violations_of(rule, resources)
    assert message == (
        "prefill-backlog-seconds divides the in-flight tokens by 15928.0, the router llmd-router-chart's"
        f" prefix-cache-affinity-filter prices prefill at {rate} tokens/s: one rate"
    )


def test_token_scaling_needs_one_endpoint_picker() -> None:
    with pytest.raises(ConfigError, match=r"router\.epp_replicas"):
        plan(loading.load_preset(TOKENS[0], [TOKENS[1], "router.epp_replicas=2"]))


# -- the derived rate and the token signals ---------------------------------------------------------------------


def _costs(weights_read_s: float) -> EngineCosts:
    return EngineCosts(
        gemm_s_per_token=1e-5,
        attention_s_per_pair=1e-9,
        weights_read_s=weights_read_s,
        kv_read_s_per_token=0.0,
        load=LoadCosts(0.0, 0.0),
        max_batched_tokens=8192,
        max_seqs=256,
        kv_tokens=1_000_000,
    )


def test_the_peak_prefill_rate_is_one_full_chunk_alone() -> None:
    """8,192 x 1e-5 s of GEMMs + 8,192^2 / 2 x 1e-9 s of attention = 0.115474432 s: 70,942 tok/s; where reading the
    weights (1 s) outlasts the GEMMs, 1 s + 0.033554432 s of attention = 1.033554432 s: 7,926 tok/s."""
    compute = peak_prefill_rate(_costs(0.01))
    assert compute.seconds == pytest.approx(0.115474432)
    assert compute.whole == 70_942
    assert peak_prefill_rate(_costs(1.0)).whole == 7_926


def test_the_token_queries_divide_by_the_rate_and_sum_the_kv_in_use() -> None:
    assert keda_tokens.token_queries("ns", 14_896, "vllm:kv_cache_usage_perc") == {
        "backlog": '(sum(llm_d_epp_inflight_tokens{namespace="ns",producer_name="inflight-load-producer"}) / 14896)'
        " or vector(0)",
        "kv": 'sum(vllm:kv_cache_usage_perc{namespace="ns"}) or vector(0)',
    }
    with pytest.raises(ValueError, match="positive"):
        keda_tokens.token_queries("ns", 0, "vllm:kv_cache_usage_perc")
    with pytest.raises(ValueError, match="backlog"):
        keda_tokens.TokenThresholds(backlog_s=0)


def _replay(threshold: float, prefill_rate: float) -> hpa.Replay:
    return hpa.replay(
        hpa.ReplayInputs(
            initial_replicas=2,
            capacity_rps=1.0,
            concurrency=16,
            cold_start_s=300,
            min_replicas=1,
            max_replicas=8,
            cpu_tier=ByteSize(0),
            triggers=(hpa.Trigger("backlog", threshold),),
            behavior=hpa.KUBERNETES_DEFAULT,
            prompt_tokens=10_000,
            prefill_rate=prefill_rate,
        )
    )


def test_the_backlog_signal_scales_on_seconds_of_queued_prefill() -> None:
    """A 4x step queues requests of 10,000 tokens at 10,000 tok/s (one second each): a 1.5 s threshold scales out;
    a threshold no queue reaches in the step, or no rate (no signal), keeps the initial count."""
    assert _replay(1.5, 10_000).peak_replicas == 8
    assert _replay(1e9, 10_000).peak_replicas == 2
    assert _replay(1.5, 0.0).peak_replicas == 2
