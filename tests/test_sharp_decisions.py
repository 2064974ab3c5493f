"""Sharp tests: each decision the plan and the checks make, at its boundary, asserted as the decision itself (which
size, which replica, which suggestion, refused or not), with the expected value written here by hand rather than read
back from the module under test. Issue 48 item 7: faults seeded in these places last round passed their tests (the
tier objective's choice at its edges, the HBM fit's suggestions, routing ties, the cluster outputs' and provider
kinds' cross-checks, identity on pods without a connector config)."""

from __future__ import annotations

import copy
import dataclasses
import re
from types import SimpleNamespace
from typing import Any, cast

import pytest

from components.catalog import labels
from components.catalog.support import ComboDefaults
from components.formulas import keep_up
from components.formulas.hbm import HbmBudget
from components.formulas.replica_routing import Pick, Router, ServiceRates, Signals, prefix_tokens
from components.formulas.requests import Request
from components.units import ByteSize, GiB
from policies.resources import Resource
from stacks.config import StackConfig
from stacks.config.cache_section import MAX_MEMORY_FRACTION
from stacks.config.cluster_facts import ClusterOutputs
from stacks.config.cluster_outputs import check_serving, read_outputs, serving_data
from stacks.config.errors import ConfigError
from stacks.config.provider_kinds import PROVIDER_KINDS
from stacks.config.providers import PROVIDERS
from stacks.planning import hbm_fit
from stacks.planning.workload.cost_records import SizePrice
from stacks.planning.workload.tier_curve import TierChoice
from stacks.planning.workload.tier_objective import SizeCost, cheapest
from tests.policy_cases import RULE, recorded, violations_of

# -- the cost objective's choice --------------------------------------------------------------------------------

SIZES = [ByteSize(n * GiB) for n in (8, 16, 32)]


def _weighed(*usd: float | None, replica_usd: float = 10.0) -> tuple[SizeCost, ...]:
    """One SizeCost per size of SIZES, each costing `usd` $/hour (None: no count fits): one replica at `replica_usd`
    plus the rest as the filesystem tier."""
    out = []
    for size, cost in zip(SIZES, usd, strict=True):
        price = SizePrice(replica_usd, None if cost is None else cost - replica_usd, ())
        out.append(SizeCost(size, None if cost is None else 1, price))
    return tuple(out)


LATENCY = TierChoice(SIZES[2], "the curve's")


def test_cost_takes_the_cheapest_size() -> None:
    assert cheapest(_weighed(14.0, 12.0, 13.0), LATENCY, None).size == SIZES[1]


def test_a_tie_to_the_cent_takes_the_smallest_size() -> None:
    """$12.004 and $12.001 are $12.00 both: the smaller of the two, not the sub-cent cheaper larger one."""
    assert cheapest(_weighed(12.004, 12.001, 13.0), LATENCY, None).size == SIZES[0]
    assert cheapest(_weighed(13.0, 12.0, 12.0), LATENCY, None).size == SIZES[1]


def test_a_cent_decides() -> None:
    assert cheapest(_weighed(12.01, 12.00, 13.0), LATENCY, None).size == SIZES[1]


def test_a_size_where_no_count_fits_is_never_taken_however_cheap_it_reads() -> None:
    assert cheapest(_weighed(None, 20.0, 30.0), LATENCY, None).size == SIZES[1]
    none = cheapest(_weighed(None, None, None), LATENCY, None)
    assert none.size == LATENCY.size and none.reason.startswith("no CPU-tier size the node holds keeps up")


def test_a_size_costs_its_replicas_times_one_replica_plus_its_tier() -> None:
    """3 x $5.25 + $1.50 = $17.25; unpriced parts leave it unpriced, never $0."""
    assert SizePrice(5.25, 1.5, ()).usd_per_hour(3) == pytest.approx(17.25)
    assert SizePrice(5.25, 1.5, ()).usd_per_hour(1) == pytest.approx(6.75)
    assert SizePrice(None, 1.5, ()).usd_per_hour(3) is None and SizePrice(5.25, None, ()).usd_per_hour(3) is None


# -- the HBM fit's suggestions ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Model:
    name: str = "m"
    attention_heads: int = 64


@dataclasses.dataclass(frozen=True)
class _Accelerator:
    devices_per_node: int = 8


@dataclasses.dataclass(frozen=True)
class _Budget:
    """A budget whose fit is a rule written here: weights fit from `weights_from` ranks and a `fraction_from` share;
    a sequence fits from `context_from` ranks; KV tokens as given."""

    tensor_parallelism: int = 1
    devices: int = 1
    memory_fraction: float = 0.9
    kv_tokens: int = 0
    weights_from: int = 1
    context_from: int = 1
    fraction_from: float = 0.0
    model: _Model = _Model()
    accelerator: _Accelerator = _Accelerator()

    @property
    def weights_fit(self) -> bool:
        return self.tensor_parallelism >= self.weights_from and self.memory_fraction >= self.fraction_from

    @property
    def context_fits(self) -> bool:
        return self.tensor_parallelism >= self.context_from and self.memory_fraction >= self.fraction_from


GPU_DEFAULTS = cast(ComboDefaults, SimpleNamespace(devices=None))  # one device per rank (not a TPU pod)


def _what_fits(**budget: Any) -> str:
    return hbm_fit._what_fits(cast(HbmBudget, _Budget(**budget)), GPU_DEFAULTS)


def test_the_suggested_parallelism_is_the_smallest_that_fits_and_divides_the_heads() -> None:
    """64 heads: 3 does not divide them, so a model that fits from 3 ranks is told 4; nor do 5, 6 or 7 (remainders
    4, 4 and 1), so one that fits from 5 is told 8."""
    assert _what_fits(weights_from=3, context_from=3).startswith("cache.tensor_parallelism 4 (")
    assert _what_fits(weights_from=5, context_from=5).startswith("cache.tensor_parallelism 8 (")
    assert _what_fits(weights_from=2, context_from=2).startswith("cache.tensor_parallelism 2 (")


def test_a_node_of_devices_is_the_largest_parallelism_suggested() -> None:
    """Fits only at 8 ranks on a node of 8: 8 is suggested; past the node, nothing is."""
    assert _what_fits(weights_from=8, context_from=8).startswith("cache.tensor_parallelism 8 (")
    assert _what_fits(weights_from=9, context_from=9) == "a larger accelerator or a smaller model"


def test_parallelism_is_suggested_only_where_both_the_weights_and_a_sequence_fit() -> None:
    assert _what_fits(weights_from=2, context_from=4).startswith("cache.tensor_parallelism 4 (")


@pytest.mark.parametrize(
    ("kv_tokens", "suggested"),
    [
        (1023, None),
        (1024, "cache.max_model_len 1024"),
        (2047, "cache.max_model_len 1024"),
        (2048, "cache.max_model_len 2048"),
    ],
)
def test_the_suggested_context_is_the_kv_rounded_down_to_whole_thousands(kv_tokens: int, suggested: str | None) -> None:
    """Weights fit, a sequence does not (at no parallelism): the context the KV holds, down to a multiple of 1024,
    and none below 1024."""
    text = _what_fits(weights_from=1, context_from=99, kv_tokens=kv_tokens)
    assert text == (suggested or "a larger accelerator or a smaller model")


def test_the_least_share_that_fits_is_found_up_to_the_configs_ceiling() -> None:
    least = hbm_fit._least_fraction
    assert least(cast(HbmBudget, _Budget(memory_fraction=0.9, fraction_from=0.93))) == 0.93
    assert least(cast(HbmBudget, _Budget(memory_fraction=0.9, fraction_from=MAX_MEMORY_FRACTION))) == 0.99
    assert least(cast(HbmBudget, _Budget(memory_fraction=0.9, fraction_from=0.995))) is None


# -- routing ties -------------------------------------------------------------------------------------------------

RATES = ServiceRates(prefill_tokens_per_s=10_000.0, decode_s_per_token=0.01)


def _request(*ids: int, at_ms: int = 0) -> Request:
    return Request(at_ms, 512 * len(ids), 8, tuple(ids))


def _router(replicas: int = 3, cpu_blocks: int = 100) -> Router:
    return Router(replicas, hbm_blocks=100, cpu_blocks=cpu_blocks, rates=RATES)


def test_a_tie_goes_to_the_lowest_replica() -> None:
    """Replicas 1 and 2 hold the prompt alike and queue alike: 1, the lower of the tied best (not 0, which holds
    nothing, nor 2)."""
    router = _router()
    router.hbm[1].touch_all([7, 8])
    router.hbm[2].touch_all([7, 8])
    assert router.pick(_request(7, 8), Signals([0, 0, 0], [0.0, 0.0, 0.0])).replica == 1


def test_the_queue_scorer_prefers_the_shortest_queue() -> None:
    assert _router().pick(_request(1), Signals([5, 0, 5], [0.0, 0.0, 0.0])).replica == 1
    assert _router().pick(_request(1), Signals([0, 5, 5], [0.5, 0.0, 0.0])).replica == 0  # queue 1 > KV 0.5


def test_the_kv_scorer_prefers_the_emptiest_cache_where_the_queues_are_equal() -> None:
    assert _router().pick(_request(1), Signals([0, 0, 0], [0.9, 0.1, 0.5])).replica == 1
    assert _router().pick(_request(1), Signals([0, 0, 0], [0.2, 0.2, 0.2])).replica == 0  # all equal: the lowest


def test_no_hit_requests_go_round_the_replicas_least_recently_sent_first() -> None:
    router = _router()
    picked = []
    for i in range(4):
        request = _request(100 + i)
        pick = router.pick(request, Signals([0, 0, 0], [0.0, 0.0, 0.0]))
        router.sent_live(request, pick)
        picked.append(pick.replica)
    assert picked == [0, 1, 2, 0]


def test_a_hit_in_one_index_is_not_a_cold_request() -> None:
    """A hit in HBM alone (no CPU index): not cold, so the no-hit scorer does not pull it to replica 0."""
    router = _router(cpu_blocks=0)
    router.hbm[2].touch_all([5])
    pick = router.pick(_request(5), Signals([0, 0, 0], [0.0, 0.0, 0.0]))
    assert pick == Pick(2, 1, False)


def test_a_prompts_full_prefix_is_its_length_and_a_partial_one_whole_blocks() -> None:
    request = Request(0, 1000, 8, (1, 2))  # the second block holds 488 tokens
    assert prefix_tokens(request, 2, 512) == 1000
    assert prefix_tokens(request, 1, 512) == 512


# -- a cluster's outputs against a serving stack -----------------------------------------------------------------


def _outputs(**more: Any) -> ClusterOutputs:
    data: dict[str, Any] = {
        "stack": "gke-cluster",
        "provider": "gke",
        "platform": "gke",
        "name": "llmd",
        "gaie_version": "v1.0.0",
    }
    return read_outputs({**data, **more}, "x.json", "cluster.outputs_file")


def _serving(namespace: str = "llm-d", autoscaling: bool = False) -> StackConfig:
    """What check_serving reads of a serving stack's config: its namespace and whether it autoscales."""
    return cast(StackConfig, SimpleNamespace(namespace=namespace, autoscaling=SimpleNamespace(enabled=autoscaling)))


def test_a_serving_stack_may_not_take_the_namespace_of_its_clusters_gateway() -> None:
    gateway = {"name": "gw", "namespace": "gateway", "class_name": "gke-l7-regional-external-managed",
               "body_routing": False, "proxy_subnet_cidr": "10.0.0.0/23"}  # fmt: skip
    outputs = _outputs(gateway=gateway)
    with pytest.raises(ConfigError, match="Gateway lives there"):
        check_serving(_serving("gateway"), outputs, "gke-cluster", False)
    check_serving(_serving("llm-d"), outputs, "gke-cluster", False)  # another namespace: taken


def test_autoscaling_needs_the_clusters_keda() -> None:
    with pytest.raises(ConfigError, match="runs no KEDA"):
        check_serving(_serving(autoscaling=True), _outputs(keda=False), "c", False)
    check_serving(_serving(autoscaling=True), _outputs(keda=True), "c", False)
    check_serving(_serving(autoscaling=False), _outputs(keda=False), "c", False)


def test_a_reserved_lustre_claim_admits_its_own_namespace_and_an_unreserved_one_any() -> None:
    lustre = {"backend": "gcp-lustre", "storage_class": "lustre-class", "size": "9000Gi", "lustre_throughput": 1000}
    reserved = _outputs(storage={**lustre, "claim_namespace": "team-a"})
    check_serving(_serving("team-a"), reserved, "c", True)
    with pytest.raises(ConfigError, match="reserved for a claim in team-a"):
        check_serving(_serving("team-b"), reserved, "c", True)
    check_serving(_serving("team-b"), reserved, "c", False)  # no filesystem tier: the claim is not its
    check_serving(_serving("team-b"), _outputs(storage=lustre), "c", True)  # reserved for none


def test_the_crd_release_is_the_clusters_unless_set_to_the_same() -> None:
    outputs = _outputs()
    assert serving_data({}, outputs, "c")["router"]["gaie_version"] == "v1.0.0"
    assert serving_data({"router": {"gaie_version": "v1.0.0"}}, outputs, "c")["router"]["gaie_version"] == "v1.0.0"
    with pytest.raises(ConfigError, match=re.escape("applied the InferencePool CRDs of v1.0.0")):
        serving_data({"router": {"gaie_version": "v0.9.0"}}, outputs, "c")


def test_a_mirror_is_of_the_cloud_that_created_the_cluster() -> None:
    mirror = {"cloud": "gke", "region": "us-central1", "project": "my-project", "registries": ["docker.io"]}
    assert _outputs(mirror=mirror).mirror is not None
    with pytest.raises(ConfigError, match=re.escape("mirror.cloud = 'gke': a mirror of the cloud of provider eks")):
        _outputs(provider="eks", platform="base", mirror=mirror)
    eks = {**mirror, "cloud": "eks", "region": "us-east-1", "project": "123456789012"}
    assert _outputs(provider="eks", platform="base", mirror=eks).mirror is not None
    with pytest.raises(ConfigError, match="project"):
        _outputs(provider="eks", platform="base", mirror={**eks, "project": "my-project"})  # a GCP project on AWS
    with pytest.raises(ConfigError, match=re.escape("direct = (set): belongs to an ECR mirror")):
        _outputs(mirror={**mirror, "direct": {"ghcr.io": "public"}})
    _outputs(provider="eks", platform="base", mirror={**eks, "direct": {"ghcr.io": "public"}})


def test_a_gateway_class_with_proxies_outside_the_cluster_needs_their_range_and_one_inside_refuses_it() -> None:
    outside = {"name": "gw", "namespace": "gw", "class_name": "gke-l7-regional-external-managed", "body_routing": False}
    with pytest.raises(ConfigError, match="needs its proxies' range"):
        _outputs(gateway=outside)
    inside = {"name": "gw", "namespace": "gw", "class_name": "kgateway", "body_routing": False}
    _outputs(provider="existing", platform="base", gateway=inside)
    with pytest.raises(ConfigError, match="runs its proxies in the cluster"):
        _outputs(provider="existing", platform="base", gateway={**inside, "proxy_subnet_cidr": "10.0.0.0/23"})


def test_efs_storage_carries_no_lustre_settings() -> None:
    efs = {"backend": "aws-efs", "storage_class": "efs-sc", "size": "1Ti"}
    _outputs(provider="eks", platform="base", storage=efs)
    with pytest.raises(ConfigError, match="belongs to backend gcp-lustre"):
        _outputs(provider="eks", platform="base", storage={**efs, "claim_namespace": "a"})
    with pytest.raises(ConfigError, match="belongs to backend gcp-lustre"):
        _outputs(provider="eks", platform="base", storage={**efs, "lustre_throughput": 125})


def test_the_provider_kinds_decide_the_layer_and_the_fixed_platform() -> None:
    """Written out: a stack on another stack's cluster serves; GKE alone fixes its platform."""
    assert {k: v.layer for k, v in PROVIDER_KINDS.items()} == {
        "existing": "all",
        "gke": "all",
        "eks": "all",
        "stack": "serving",
    }
    assert {p.kind.key: p.platform for p in PROVIDERS.values()} == {
        "existing": None,
        "gke": "gke",
        "eks": None,
        "stack": None,
    }


# -- the keep-up rule's allowance ------------------------------------------------------------------------------------


def test_a_stages_allowance_is_its_median_request_alone() -> None:
    """Five requests 25 s apart, alone 9, 1, 1, 1 and 9 s (median 1 s, mean 4.2 s, slowest 9 s): a wait that grows
    from 0 to 2 s across the stage grows by more than the allowance, so the stage does not keep up."""
    (stage,) = keep_up.stage_backlogs([0] * 5, [0, 25, 50, 75, 100], [0, 0, 0, 0, 2], [9, 1, 1, 1, 9])
    assert (stage.allowance_s, stage.growth_s) == (1.0, 2.0)
    assert stage.grows and not keep_up.keeps_up(0.5, [stage])


# -- identity on pods without a connector config ------------------------------------------------------------------


def _decode(resources: list[Resource]) -> dict[str, Any]:
    spec: dict[str, Any] = next(
        r for r in resources if r.type == "kubernetes:apps/v1:Deployment" and "decode" in r.name
    ).props["spec"]["template"]
    return spec


def test_a_pod_that_holds_devices_and_says_nothing_is_reported() -> None:
    """No labels, no kv-transfer config: its devices alone make it a pod the rule judges."""
    resources = recorded("gpu-vllm-native-cpu")
    template = _decode(resources)
    template["metadata"]["labels"].pop(labels.ACCELERATOR_PROFILE_LABEL)
    template["metadata"]["labels"].pop(labels.KV_CONNECTOR_LABEL)
    container = template["spec"]["containers"][0]
    config = container["args"].index("--kv-transfer-config")
    del container["args"][config : config + 2]
    messages = violations_of(RULE["identity-labels"], resources)
    assert any(f"carry no {labels.ACCELERATOR_PROFILE_LABEL} label" in m for m in messages), messages


def test_a_device_count_at_the_nodes_limit_passes_and_one_more_does_not() -> None:
    """An H100 node has 8: a pod asking 8 is within it, 9 is not."""
    resources = recorded("gpu-vllm-native-cpu")
    container = _decode(resources)["spec"]["containers"][0]
    rule = RULE["identity-labels"]
    for count, refused in ((8, False), (9, True)):
        forged = copy.deepcopy(resources)
        forged_container = _decode(forged)["spec"]["containers"][0]
        for kind in ("requests", "limits"):
            forged_container["resources"][kind]["nvidia.com/gpu"] = str(count)
        found = [m for m in violations_of(rule, forged) if "more than the 8 a node of it has" in m]
        assert bool(found) is refused, (count, found)
    assert container["resources"]["limits"]["nvidia.com/gpu"] in ("2", 2)
