"""What a created cluster holds besides its machines, priced: each line against hand arithmetic at the catalog's
rows (written out here), each count against what the rendered stack creates (the goldens' resources.json), and
the edges: Cloud NAT's 32-VM tier and its addresses' ports, the boot disk a machine type takes, the root volume a
launch template leaves."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from components.catalog import cluster_extras
from components.specs.eks_cluster import takes_launch_template
from stacks.config import loading
from stacks.config.providers import gke_provider, provider_of
from stacks.config.providers.cluster_provider import ClusterBill, Extra
from stacks.planning.plan import StackPlan, plan

GOLDEN = Path(__file__).parent / "golden"

# The catalog's on-demand rows (components/catalog/prices.py), written out: us-central1 and us-east-1.
NAT_PER_VM = 0.0014  # per VM-hour, up to 32 VMs
NAT_CAPPED = 0.044  # per gateway-hour, above 32 VMs
NAT_IP = 0.005  # per address-hour
PD_BALANCED = 0.10  # per GiB-month
HYPERDISK = 0.08  # per GiB-month (capacity)
EKS_NAT, EKS_IP = 0.045, 0.005  # per hour
GP3, GP2 = 0.08, 0.10  # per GB-month


@functools.cache
def _plan(name: str, overrides: tuple[str, ...] = ()) -> StackPlan:
    return plan(loading.load_named(name, list(overrides)))


def _bill(name: str, *overrides: str) -> ClusterBill:
    config = loading.load_named(name, list(overrides))
    bill = provider_of(config).bill(config)
    assert bill is not None
    return bill


def _lines(stack_plan: StackPlan) -> dict[str, float]:
    """The cost's cluster lines by what they name, $/hour."""
    assert stack_plan.cost is not None
    return {x.what: x.usd_per_hour for x in stack_plan.cost.lines if x.category == "cluster"}


def _resources(preset: str, kind: str) -> list[dict[str, Any]]:
    rows = json.loads((GOLDEN / preset / "resources.json").read_text(encoding="utf-8"))
    return [r["inputs"] for r in rows if r["type"] == kind]


def test_gke_tpu_v5p_extras_by_hand() -> None:
    """3 system nodes (1 per zone x 3 zones) + 3 ct5p nodes = 6 VMs behind Cloud NAT: 6 x 0.0014 = 0.0084 $/hour;
    ceil(6 x 64 / 64,512) = 1 address at 0.005; 6 boot disks of 100 GiB pd-balanced (ct5p and e2 take it):
    600 x 0.10 / 730 = 0.0821918 $/hour. The preset prints a total: every item is priced."""
    stack_plan = _plan("gke-tpu-v5p")
    assert _lines(stack_plan) == {
        "cluster management fee": pytest.approx(0.10),
        "Cloud NAT gateway serving 6 VMs": pytest.approx(0.0084),
        "Cloud NAT's external address": pytest.approx(0.005),
        "boot disks of 6 nodes: pd-balanced, 100 GiB each": pytest.approx(0.0821918, abs=1e-7),
    }
    assert stack_plan.cost is not None and not stack_plan.cost.unpriced


def test_the_nat_tier_changes_at_32_vms() -> None:
    """gke-h100-lustre's 3 system nodes + its h100 pool: 29 h100 nodes make 32 VMs, billed 32 x 0.0014 = 0.0448
    $/hour; 30 make 33, billed the capped 0.044 for the gateway."""
    at_cap = _plan("gke-h100-lustre", ("node_pools.h100.node_count=29",))
    over = _plan("gke-h100-lustre", ("node_pools.h100.node_count=30",))
    assert _lines(at_cap)["Cloud NAT gateway serving 32 VMs"] == pytest.approx(32 * NAT_PER_VM)
    assert _lines(over)["Cloud NAT gateway serving 33 VMs"] == pytest.approx(NAT_CAPPED)
    assert [x.item for x in _bill("gke-h100-lustre", "node_pools.h100.node_count=30").extras][:2] == [
        "gke-cloud-nat-gateway",
        "gke-nat-ip",
    ]


def test_nat_addresses_follow_the_ports_each_vm_takes() -> None:
    """64,512 ports per address / 64 per VM = 1,008 VMs per address: 1,008 VMs take 1 address, 1,009 take 2."""
    by_vms = {vms: gke_provider._cloud_nat(vms)[1] for vms in (1, 1008, 1009, 2016, 2017)}
    assert {vms: extra.quantity for vms, extra in by_vms.items()} == {1: 1, 1008: 1, 1009: 2, 2016: 2, 2017: 3}
    assert by_vms[1009].what == "Cloud NAT's external addresses"
    assert by_vms[1009].formula.startswith("2 = ceil(1009 VMs x 64 ports / 64,512 per address)")


def test_no_cloud_nat_no_nat_lines_nor_its_data_processing() -> None:
    bill = _bill("gke-tpu-v5p", "cluster.gke.cloud_nat=false")
    assert [x.item for x in bill.extras] == ["gce-pd-balanced"]
    assert not any("Cloud NAT" in what for what in bill.usage)


def test_a_hyperdisk_only_machine_boots_from_hyperdisk_balanced() -> None:
    """gke-tpu-v6e: the 3 system nodes' boot disks on pd-balanced (300 x 0.10 / 730 = 0.0410959 $/hour), the 3
    ct6e nodes' on hyperdisk-balanced (300 x 0.08 / 730 = 0.0328767): TPU v6e takes Hyperdisk only. The hyperdisk
    volumes' performance above the included 3,000 IOPS and 140 MiB/s is named, not guessed."""
    stack_plan = _plan("gke-tpu-v6e")
    lines = _lines(stack_plan)
    assert lines["boot disks of 3 nodes: pd-balanced, 100 GiB each"] == pytest.approx(300 * PD_BALANCED / 730)
    assert lines["boot disks of 3 nodes: hyperdisk-balanced, 100 GiB each"] == pytest.approx(300 * HYPERDISK / 730)
    assert lines["boot disks of 3 nodes: hyperdisk-balanced, 100 GiB each"] == pytest.approx(0.0328767, abs=1e-7)
    assert stack_plan.cost is not None
    [unpriced] = stack_plan.cost.unpriced
    assert unpriced.what == "the 3 hyperdisk-balanced boot disks' IOPS and throughput above the included"
    assert "above 3,000 IOPS and 140 MiB/s" in unpriced.reason
    assert unpriced.remedy == "set pricing.prices.gce-hyperdisk-performance (USD per hour of one)"
    # priced by the user: 3 disks x their rate
    priced = _plan("gke-tpu-v6e", ("pricing.prices={gce-hyperdisk-performance: 0.01}",))
    assert priced.cost is not None and not priced.cost.unpriced
    assert _lines(priced)[unpriced.what] == pytest.approx(3 * 0.01)


def test_a_boot_disk_whose_type_was_not_reached_is_named_not_guessed() -> None:
    """gke-tpu-v7-multi-host: 3 slices x 2 tpu7x hosts; their boot disk type is not known, so they are one unpriced
    item; the system pool's 3 disks are priced (300 x 0.10 / 730)."""
    stack_plan = _plan("gke-tpu-v7-multi-host")
    assert _lines(stack_plan)["boot disks of 3 nodes: pd-balanced, 100 GiB each"] == pytest.approx(0.0410959, abs=1e-7)
    assert stack_plan.cost is not None
    [unpriced] = stack_plan.cost.unpriced
    assert unpriced.what == "boot disks of 6 tpu7x-standard-4t nodes"
    assert "which one tpu7x-standard-4t takes was not reached" in unpriced.reason
    assert unpriced.remedy == "set pricing.prices.gke-boot-disk (USD per hour of one)"
    assert cluster_extras.gke_boot_disk("tpu7x-standard-4t") is None
    assert cluster_extras.gke_boot_disk("ct5p-hightpu-4t") == "pd-balanced"
    assert cluster_extras.gke_boot_disk("ct6e-standard-8t") == "hyperdisk-balanced"


def test_eks_extras_by_hand() -> None:
    """eks-h100-efs: 1 NAT gateway (0.045) and its Elastic IP (0.005); the p5 node's launch template (EFA) leaves the
    AMI's 20 GiB gp3 root volume (20 x 0.08 / 730 = 0.0021918 $/hour), the 2 system nodes get EKS's own 20 GiB gp2
    (40 x 0.10 / 730 = 0.0054795)."""
    assert _lines(_plan("eks-h100-efs")) == {
        "cluster management fee": pytest.approx(0.10),
        "NAT gateway": pytest.approx(EKS_NAT),
        "the NAT gateway's Elastic IP": pytest.approx(EKS_IP),
        "root volume of 1 node: gp3, 20 GiB each": pytest.approx(20 * GP3 / 730),
        "root volumes of 2 nodes: gp2, 20 GiB each": pytest.approx(2 * 20 * GP2 / 730),
    }
    assert round(20 * GP3 / 730, 7) == 0.0021918
    assert round(2 * 20 * GP2 / 730, 7) == 0.0054795


def test_a_pool_without_our_launch_template_gets_ekss_gp2() -> None:
    """An EFA machine or a reservation takes our launch template; neither leaves EKS's own."""
    assert takes_launch_template(True, None) and takes_launch_template(False, "cr-0123456789abcdef0")
    assert not takes_launch_template(False, None)


def test_the_counts_are_what_the_gke_stack_creates() -> None:
    """One RouterNat, AUTO_ONLY addresses on every subnet's ranges and no port settings (so 64 ports per VM); no
    node pool sets a boot disk (so GKE's 100 GiB default of the type its machine takes)."""
    [nat] = _resources("gke-tpu-v6e", "gcp:compute/routerNat:RouterNat")
    assert nat["natIpAllocateOption"] == "AUTO_ONLY"
    assert nat["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    assert not {"minPortsPerVm", "enableDynamicPortAllocation", "natIps"} & set(nat)
    pools = _resources("gke-tpu-v6e", "gcp:container/nodePool:NodePool")
    assert len(pools) == 2
    for pool in pools:
        assert not {"diskSizeGb", "diskType", "bootDisk"} & set(pool["nodeConfig"])
    # the bill's VMs are the pools' nodes: 1 system node per zone x 3 zones + 3 ct6e nodes
    nat_line = next(x for x in _bill("gke-tpu-v6e").extras if x.item == "gke-cloud-nat-vm")
    nodes = {pool["nodeConfig"]["machineType"]: pool["nodeCount"] for pool in pools}
    assert nat_line.quantity == nodes["e2-standard-8"] * gke_provider.REGIONAL_POOL_ZONES + nodes["ct6e-standard-8t"]


def test_the_counts_are_what_the_eks_stack_creates() -> None:
    """As many NAT gateways and Elastic IPs as the bill counts; the launch template sets no block device (the AMI's
    root volume stays) and the system node group no disk size (EKS's default); the p5 group alone has a template."""
    bill = _bill("eks-h100-efs")
    counts: dict[str, float] = {x.item: x.quantity for x in bill.extras}
    assert len(_resources("eks-h100-efs", "aws:ec2/natGateway:NatGateway")) == counts["eks-nat-gateway"] == 1
    assert len(_resources("eks-h100-efs", "aws:ec2/eip:Eip")) == counts["aws-public-ipv4"] == 1
    [template] = _resources("eks-h100-efs", "aws:ec2/launchTemplate:LaunchTemplate")
    assert "blockDeviceMappings" not in template
    groups = {g["nodeGroupName"]: g for g in _resources("eks-h100-efs", "aws:eks/nodeGroup:NodeGroup")}
    assert {name for name, g in groups.items() if "launchTemplate" in g} == {"llmd-h100-h100"}
    assert all("diskSize" not in g for g in groups.values())
    gib = cluster_extras.EKS_ROOT_VOLUME_GIB
    desired = {name: g["scalingConfig"]["desiredSize"] for name, g in groups.items()}
    assert counts["ebs-gp3"] == pytest.approx(desired["llmd-h100-h100"] * gib / 730)
    assert counts["ebs-gp2"] == pytest.approx(desired["llmd-h100-system"] * gib / 730)


def test_an_extra_without_a_price_says_what_it_is_billed_by() -> None:
    """us-west-2 has machine and fee rows but none for EKS's extras: each is named with its key and unit."""
    sets = ("cluster.eks.region=us-west-2", "cluster.eks.availability_zones=[us-west-2a, us-west-2b]")
    cost = _plan("eks-h100-efs", sets).cost
    assert cost is not None
    by_what = {u.what: u for u in cost.unpriced}
    nat = by_what["NAT gateway"]
    assert nat.reason == "billed per gateway-hour; no catalog on-demand price for eks-nat-gateway in us-west-2"
    assert nat.remedy == "set pricing.prices.eks-nat-gateway (USD per hour of one)"
    assert by_what["root volumes of 2 nodes: gp2, 20 GiB each"].remedy == (
        "set pricing.prices.ebs-gp2 (USD per GB-month)"
    )


def test_an_extra_line_states_its_formula() -> None:
    extra = next(x for x in _bill("gke-tpu-v5p").extras if x.item == "gce-pd-balanced")
    assert extra == Extra(
        "boot disks of 6 nodes: pd-balanced, 100 GiB each",
        "gce-pd-balanced",
        600 / 730,
        "6 x 100 GiB x ${usd}/GiB-month / 730 h",
        "per GiB-month provisioned: GKE's default boot disk (the stack sets none)",
    )
