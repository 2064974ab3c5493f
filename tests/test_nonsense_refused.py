"""Issue 29 item 6: values that do nothing, or that the cloud or the container would refuse, refused at their
root in one line; and errors that named a field the user never set now name the one they did."""

from __future__ import annotations

import pytest

from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan


def _refused(name: str, overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_named(name, overrides))
    text = str(caught.value)
    assert "\n" not in text
    return text.removeprefix("invalid stack config: ")


def _accepted(name: str, overrides: list[str]) -> None:
    plan(loading.load_named(name, overrides))


# -- the router's containers below the least they start with -----------------------------------------------
@pytest.mark.parametrize("section", ["epp_resources", "proxy_resources"])
def test_a_router_container_below_its_floor_is_refused_and_at_it_accepted(section: str) -> None:
    assert _refused("dev", [f"router.{section}.cpu=99m"]).startswith(f"router.{section}.cpu = '99m': at least 100m: ")
    assert _refused("dev", [f"router.{section}.cpu=0.099"]).startswith(f"router.{section}.cpu = '0.099': at least")
    assert _refused("dev", [f"router.{section}.memory=1Mi"]).startswith(
        f"router.{section}.memory = '1Mi': at least 128Mi: "
    )
    assert _refused("dev", [f"router.{section}.memory=127Mi"]).startswith(f"router.{section}.memory = '127Mi'")
    _accepted("dev", [f"router.{section}.cpu=100m"])
    _accepted("dev", [f"router.{section}.cpu=0.1"])
    if section == "proxy_resources":
        _accepted("dev", [f"router.{section}.memory=128Mi"])


def test_the_epps_memory_holds_its_prefix_index_for_every_endpoint() -> None:
    """The dev stack's index: 585 entries a server x 1 endpoint x 70 bytes above the 128 MiB base; with
    more endpoints the floor grows with them."""
    assert _refused("dev", ["router.epp_resources.memory=128Mi"]) == (
        "router.epp_resources.memory = '128Mi': at least 129Mi: 128Mi base plus the prefix index, 585 entries a"
        " server x 1 endpoints x 70 bytes (llm-d/llm-d-router#1158)"
    )
    _accepted("dev", ["router.epp_resources.memory=129Mi"])
    more = _refused("gke-h100-lustre", ["router.epp_resources.memory=128Mi"])
    assert "6400 entries a server x 2 endpoints" in more


# -- regions and zones the clouds have -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        (
            "gke-h100-lustre",
            ["cluster.gke.region=mars-central1", "cluster.gke.zone=mars-central1-a"],
            "cluster.gke.region = 'mars-central1': no such GCP region (components/catalog/regions.py, from"
            " https://cloud.google.com/compute/docs/regions-zones)",
        ),
        (
            "gke-h100-lustre",
            ["cluster.gke.zone=us-central1-z"],
            "cluster.gke.zone = 'us-central1-z': must be a zone of region us-central1: us-central1-a to us-central1-f",
        ),
        (
            "eks-h100-efs",
            ["cluster.eks.region=us-moon-1"],
            "cluster.eks.region = 'us-moon-1': no such AWS region (components/catalog/regions.py, from"
            " https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html)",
        ),
        (
            "eks-h100-efs",
            ["cluster.eks.availability_zones=[us-east-1q, us-east-1a]"],
            "cluster.eks.availability_zones = ['us-east-1q', 'us-east-1a']: must be zones of region us-east-1:"
            " us-east-1a to us-east-1f",
        ),
    ],
)
def test_a_region_or_zone_the_cloud_does_not_have_is_refused(name: str, overrides: list[str], message: str) -> None:
    assert _refused(name, overrides) == message


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("gke-h100-lustre", ["cluster.gke.region=europe-west4", "cluster.gke.zone=europe-west4-f"]),
        ("eks-h100-efs", ["cluster.eks.region=eu-west-1", "cluster.eks.availability_zones=[eu-west-1a, eu-west-1f]"]),
    ],
)
def test_a_real_region_and_its_zones_are_accepted(name: str, overrides: list[str]) -> None:
    _accepted(name, overrides)


# -- a proxy subnet inside the control plane's range ---------------------------------------------------------
def test_a_proxy_subnet_overlapping_the_control_planes_range_is_refused() -> None:
    message = (
        "overlaps cluster.gke.master_ipv4_cidr {}, the control plane's range; allowed: a /23 unused elsewhere"
        " in the VPC"
    )
    assert _refused_config("gke-cluster", ["gateway.proxy_subnet_cidr=172.16.0.0/23"]) == (
        "gateway.proxy_subnet_cidr = '172.16.0.0/23': " + message.format("172.16.0.0/28")
    )
    assert _refused_config("gke-cluster", ["cluster.gke.master_ipv4_cidr=10.129.1.240/28"]) == (
        "gateway.proxy_subnet_cidr = '10.129.0.0/23': " + message.format("10.129.1.240/28")
    )
    loading.load_named("gke-cluster", ["gateway.proxy_subnet_cidr=172.16.2.0/23"])  # just past the /28's /23
    loading.load_named("gke-cluster", ["cluster.gke.master_ipv4_cidr=10.129.2.0/28"])  # just past the proxy's


def _refused_config(name: str, overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as caught:
        loading.load_named(name, overrides)
    return str(caught.value).removeprefix("invalid stack config: ")


# -- errors that named the wrong field -----------------------------------------------------------------------
def test_storage_a_connector_does_not_use_is_refused_naming_the_connector_not_the_variant() -> None:
    assert _refused("eks-h100-efs", ["cache.connector=mooncake-store"]) == (
        "storage.backend = 'aws-efs': creates a shared filesystem tier, which cache.connector mooncake-store does"
        " not use (its filesystem tier is node-local); allowed: existing"
    )
    assert _refused("eks-h100-efs", ["cache.tier.variant=cpu"]) == (
        "storage.backend = 'aws-efs': creates the filesystem tier's storage: needs cache.tier.variant fs"
    )


def test_a_pd_stack_that_does_not_fit_names_the_replicas_the_user_set() -> None:
    assert _refused("gpu-vllm-lmcache-server-pd", ["cache.replicas=5"]) == (
        "cache.replicas = 5: 5 replicas of 2 pods need 2 nodes of node pool h100, which has 1"
    )
    _accepted("gpu-vllm-lmcache-server-pd", ["cache.replicas=4"])  # 8 pods on the node's 8 devices


def test_autoscaling_min_replicas_above_what_the_pool_holds_names_min_replicas() -> None:
    assert _refused("gpu-vllm-native-fs-autoscale", ["autoscaling.min_replicas=9"]) == (
        "autoscaling.min_replicas = 9: above the 8 replicas the pool holds: 2 nodes of node pool h100 x 4 pods a"
        " node (4 by devices) / 1 pods a replica"
    )
    assert _refused("gpu-vllm-native-fs-autoscale", ["autoscaling.min_replicas=3"]).startswith(
        "cache.replicas = 2: the initial count must lie within autoscaling's 3..8 replicas"
    )


# -- a label the program owns on a created pool --------------------------------------------------------------
@pytest.mark.parametrize(("name", "value"), [("gke-h100-lustre", "system"), ("eks-h100-efs", "h100")])
def test_a_created_pools_own_label_set_by_hand_is_refused(name: str, value: str) -> None:
    """The program labels a created pool's nodes llm-d.ai/node-pool=<key> and the model servers select it; a
    value of the user's (`system`: the system pool's) would take its place."""
    assert _refused_config(name, [f"node_pools.h100.labels={{llm-d.ai/node-pool: {value}}}"]) == (
        "node_pools.h100.labels = 'llm-d.ai/node-pool': the label a created pool's nodes carry with its key"
        " (llm-d.ai/node-pool=h100), which the model servers select: another value would send them to another"
        " pool; leave it out"
    )
    loading.load_named(name, ["node_pools.h100.labels={team: llm}"])  # a label of the user's own


def test_a_described_pool_may_be_selected_by_the_pool_label_its_nodes_carry() -> None:
    loading.load_named("existing-mi300", ["node_pools.mi300.labels={llm-d.ai/node-pool: mi300}"])
