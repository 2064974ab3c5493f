"""Clusters, node pools and shared storage deployed with the cache stack, in one graph."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from components.catalog.machines import MACHINES
from components.specs import eks_cluster, lmcache, storage
from components.specs.clusters import PoolSpec
from components.specs.connectors.mooncake_store import client_of
from components.units import ByteSize, GiB, MiB
from stacks.config import StackConfig, loading
from stacks.config.errors import ConfigError
from stacks.planning.hardware import allocatable_memory
from stacks.planning.plan import plan
from stacks.review.render import render
from tests.helpers import by_kind, manifests, rendered, resources


def _rows(name: str, *overrides: str) -> list[dict[str, Any]]:
    return resources(rendered(name, tuple(overrides)))


def _one(rows: list[dict[str, Any]], typ: str, name: str | None = None) -> dict[str, Any]:
    matches = [r for r in rows if r["type"] == typ and (name is None or r["name"] == name)]
    assert len(matches) == 1, (typ, name, [r["name"] for r in matches])
    return matches[0]


def _deployment(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in rows if r["type"] == "kubernetes:apps/v1:Deployment" and "model-server" in r["name"])


def test_gke_cluster_is_private_with_workload_identity_and_the_lustre_driver() -> None:
    rows = _rows("gke-h100-lustre")
    cluster = _one(rows, "gcp:container/cluster:Cluster")["inputs"]
    assert cluster["privateClusterConfig"]["enablePrivateNodes"] is True
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "my-gcp-project.svc.id.goog"}
    assert cluster["releaseChannel"] == {"channel": "REGULAR"}
    assert cluster["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    assert cluster["monitoringConfig"]["managedPrometheus"] == {"enabled": True}
    assert cluster["addonsConfig"]["lustreCsiDriverConfig"] == {"enabled": True}
    assert cluster["removeDefaultNodePool"] is True
    assert _one(rows, "gcp:compute/routerNat:RouterNat")  # private nodes pull public images
    lustre_off = _one(_rows("gke-tpu-v6e"), "gcp:container/cluster:Cluster")["inputs"]
    assert lustre_off["addonsConfig"]["lustreCsiDriverConfig"] == {"enabled": False}


def test_gke_h100_pool_and_the_model_servers_on_it() -> None:
    rows = _rows("gke-h100-lustre")
    pool = _one(rows, "gcp:container/nodePool:NodePool", "llmd-gke-h100")["inputs"]
    config = pool["nodeConfig"]
    assert config["machineType"] == "a3-highgpu-8g"
    assert config["guestAccelerators"] == [
        {"type": "nvidia-h100-80gb", "count": 8, "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}
    ]
    assert config["labels"] == {"llm-d.ai/node-pool": "h100"}
    assert config["shieldedInstanceConfig"]["enableSecureBoot"] is True
    assert pool["nodeLocations"] == ["us-central1-a"]
    deployment = _deployment(rows)
    assert deployment["inputs"]["spec"]["template"]["spec"]["nodeSelector"] == {"llm-d.ai/node-pool": "h100"}
    # The model servers wait for their pool and their storage, so a destroy removes them first.
    assert "gcp:container/nodePool:NodePool::llmd-gke-h100" in deployment["dependsOn"]
    assert "kubernetes:core/v1:PersistentVolume::llmd-lustre-volume" in deployment["dependsOn"]


def test_lustre_instance_network_class_volume_and_claim() -> None:
    rows = _rows("gke-h100-lustre")
    instance = _one(rows, "gcp:lustre/instance:Instance")["inputs"]
    assert (instance["capacityGib"], instance["perUnitStorageThroughput"]) == ("9000", "1000")
    assert instance["gkeSupportEnabled"] is True
    assert instance["network"] == "projects/my-gcp-project/global/networks/default"
    assert _one(rows, "gcp:compute/globalAddress:GlobalAddress")["inputs"]["purpose"] == "VPC_PEERING"
    assert _one(rows, "gcp:servicenetworking/connection:Connection")
    firewall = _one(rows, "gcp:compute/firewall:Firewall")["inputs"]
    assert firewall["allows"] == [{"protocol": "tcp", "ports": ["988", "6988"]}]
    objects = manifests(rendered("gke-h100-lustre"))
    [storage_class] = by_kind(objects, "StorageClass")
    assert storage_class["metadata"]["name"] == "lustre-class"
    assert storage_class["parameters"]["perUnitStorageThroughput"] == "1000"
    [volume] = by_kind(objects, "PersistentVolume")
    [claim] = by_kind(objects, "PersistentVolumeClaim")
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    assert volume["spec"]["claimRef"] == {
        "namespace": claim["metadata"]["namespace"],
        "name": claim["metadata"]["name"],
    }
    assert volume["spec"]["csi"]["volumeHandle"] == "my-gcp-project/us-central1-a/llmd-h100-kv-cache"


def test_eks_cluster_networking_node_groups_and_irsa() -> None:
    rows = _rows("eks-h100-efs")
    assert len([r for r in rows if r["type"] == "aws:ec2/subnet:Subnet"]) == 4  # public and private per zone
    assert _one(rows, "aws:ec2/natGateway:NatGateway")
    cluster = _one(rows, "aws:eks/cluster:Cluster")["inputs"]
    assert cluster["version"] == "1.33"
    h100 = _one(rows, "aws:eks/nodeGroup:NodeGroup", "llmd-eks-h100")["inputs"]
    assert h100["instanceTypes"] == ["p5.48xlarge"]
    assert h100["amiType"] == "AL2023_x86_64_NVIDIA"
    assert h100["labels"] == {"llm-d.ai/node-pool": "h100"}
    template = _one(rows, "aws:ec2/launchTemplate:LaunchTemplate")["inputs"]
    assert template["networkInterfaces"][0]["interfaceType"] == "efa"
    assert _one(rows, "aws:iam/openIdConnectProvider:OpenIdConnectProvider")["inputs"]["clientIdLists"] == [
        "sts.amazonaws.com"
    ]
    plugin = _one(rows, "kubernetes:helm.sh/v4:Chart", "llmd-nvidia-device-plugin-chart")["inputs"]
    assert plugin["chart"] == "nvidia-device-plugin" and plugin["version"] == "0.17.1"


def test_efs_file_system_mount_targets_nfs_only_and_csi_driver() -> None:
    rows = _rows("eks-h100-efs")
    assert _one(rows, "aws:efs/fileSystem:FileSystem")["inputs"]["encrypted"] is True
    targets = [r for r in rows if r["type"] == "aws:efs/mountTarget:MountTarget"]
    assert len(targets) == 2  # one per private (node) subnet
    group = _one(rows, "aws:ec2/securityGroup:SecurityGroup")["inputs"]
    assert group["ingress"] == [{"protocol": "tcp", "fromPort": 2049, "toPort": 2049, "securityGroups": ["sg-offline"]}]
    addon = _one(rows, "aws:eks/addon:Addon", "llmd-efs-csi-driver")["inputs"]
    assert addon["addonName"] == "aws-efs-csi-driver"
    role = next(r for r in rows if r["type"] == "aws:iam/role:Role" and r["name"] == "llmd-efs-csi")
    policy = json.loads(role["inputs"]["assumeRolePolicy"])
    condition = policy["Statement"][0]["Condition"]["StringEquals"]
    assert condition["oidc.eks.example/id/OFFLINE:sub"] == "system:serviceaccount:kube-system:efs-csi-controller-sa"
    [storage_class] = by_kind(manifests(rendered("eks-h100-efs")), "StorageClass")
    assert storage_class["metadata"]["name"] == "efs-sc"
    assert storage_class["parameters"]["provisioningMode"] == "efs-ap"


@pytest.mark.parametrize("name", ["gke-h100-lustre", "eks-h100-efs", "gke-tpu-v7-multi-host"])
def test_kubernetes_objects_go_through_the_clusters_provider(name: str) -> None:
    rows = _rows(name)
    provider = _one(rows, "pulumi:providers:kubernetes")
    assert provider["secretPaths"] == ["kubeconfig"]
    cluster_type = "aws:eks/cluster:Cluster" if name.startswith("eks") else "gcp:container/cluster:Cluster"
    assert any(d.startswith(cluster_type + "::") for d in provider["dependsOn"])
    kube = [r for r in rows if r["type"].startswith("kubernetes:")]
    assert {r["provider"] for r in kube} == {"k8s"}
    cloud = [r for r in rows if r["type"].startswith(("gcp:", "aws:"))]
    assert cloud and all(r["provider"] is None for r in cloud)  # the default cloud providers (ambient credentials)


@pytest.mark.parametrize(
    ("name", "machine", "topology", "pools", "nodes"),
    [
        ("gke-tpu-v5p", "ct5p-hightpu-4t", "2x2x1", 1, 3),
        ("gke-tpu-v6e", "ct6e-standard-8t", "2x4", 1, 3),
        ("gke-tpu-v7", "tpu7x-standard-4t", "2x2x1", 1, 3),
        ("gke-tpu-v7-multi-host", "tpu7x-standard-4t", "2x2x2", 3, 2),
    ],
)
def test_tpu_pools(name: str, machine: str, topology: str, pools: int, nodes: int) -> None:
    rows = [
        r for r in _rows(name) if r["type"] == "gcp:container/nodePool:NodePool" and not r["name"].endswith("system")
    ]
    assert len(rows) == pools
    for pool in rows:
        assert pool["inputs"]["nodeConfig"]["machineType"] == machine
        assert pool["inputs"]["placementPolicy"] == {"type": "COMPACT", "tpuTopology": topology}
        assert pool["inputs"]["nodeCount"] == nodes


def test_a_tier_that_cannot_fit_the_node_fails_with_both_numbers() -> None:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_preset("gke-h100-lustre", ["cache.tier.cpu=900GiB", "cache.replicas=4"]))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("invalid stack config: cache.tier.cpu = '900 GiB': 4 pods x 940Gi = 3760Gi per node")
    assert "exceed the 1701Gi allocatable of node pool h100 (a3-highgpu-8g)" in message


def test_more_accelerators_than_the_pool_has_fail() -> None:
    with pytest.raises(
        ConfigError, match=r"cache.replicas = 5: 5 pods need 2 nodes of node pool h100 \(a3-highgpu-8g\), which has 1"
    ):
        plan(loading.load_preset("gke-h100-lustre", ["cache.replicas=5"]))
    with pytest.raises(ConfigError, match=r"a pod needs 16 devices, a node of node pool h100 .* has 8"):
        plan(loading.load_preset("gke-h100-lustre", ["cache.tensor_parallelism=16"]))


def test_tier_auto_picks_the_largest_tier_that_fits() -> None:
    chosen = plan(loading.load_preset("existing-mi300"))
    assert chosen.fit is not None and chosen.fit.largest_tier is not None
    tier = chosen.fit.largest_tier
    assert chosen.sizing.cpu_tier_per_pod == tier
    assert chosen.fit.allocatable is not None and chosen.fit.per_node <= chosen.fit.allocatable
    with pytest.raises(ConfigError, match="allocatable"):
        plan(loading.load_preset("existing-mi300", [f"cache.tier.cpu={tier.bytes // GiB + 1}GiB"]))


def test_allocatable_memory_reserves_as_gke_does() -> None:
    reserved = 0.25 * 4 * GiB + 0.20 * 4 * GiB + 0.10 * 8 * GiB + 100 * MiB
    assert allocatable_memory(ByteSize(16 * GiB)).bytes == int(16 * GiB - reserved)
    big = allocatable_memory(ByteSize(1000 * GiB))
    assert big.bytes == int(1000 * GiB - (reserved + 0.06 * 112 * GiB + 0.02 * 872 * GiB))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["storage.size=10000Gi"], "storage.size = '10000Gi': Managed Lustre capacity must be a multiple of 9000Gi"),
        (["storage.size=4500Gi"], "must be at least 9000Gi at 1000 MB/s per TiB"),
        (["storage.lustre.per_unit_storage_throughput=500"], "must be at least 18000Gi at 500 MB/s per TiB"),
        (["node_pools.h100.machine_type=p5.48xlarge"], "node_pools.h100.machine_type = 'p5.48xlarge': a gke machine"),
        (["storage.backend=aws-efs"], "storage.backend = 'aws-efs': needs cluster.provider eks"),
        (["cluster.gke=null", "cluster.provider=existing"], "an existing cluster's pools are described"),
        (["cache.node_pool=null"], "cache.node_pool = None: required on a created cluster; allowed: h100"),
    ],
)
def test_cluster_and_storage_config_errors(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_preset("gke-h100-lustre", overrides))
    assert message in str(caught.value)


def test_lustre_capacity_accepts_the_tier_steps() -> None:
    assert plan(loading.load_preset("gke-h100-lustre", ["storage.size=18000Gi"])).manifests(storage.WORKLOAD)


def test_tier_auto_on_a_node_too_small_gives_both_numbers() -> None:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_preset("existing-mi300", ["node_pools.mi300.host_memory=64GiB"]))
    assert "'auto': even a 1 GiB tier needs 83Gi per node, beyond the 58Gi allocatable of node pool mi300" in str(
        caught.value
    )


def test_spot_and_reservations_per_pool() -> None:
    gke = _one(_rows("gke-h100-lustre", "node_pools.h100.spot=true", "node_pools.h100.reservation=h100-res"),
               "gcp:container/nodePool:NodePool", "llmd-gke-h100")["inputs"]["nodeConfig"]  # fmt: skip
    assert gke["spot"] is True
    assert gke["reservationAffinity"]["values"] == ["h100-res"]
    rows = _rows("eks-h100-efs", "node_pools.h100.spot=true", "node_pools.h100.reservation=cr-0123456789abcdef0")
    assert _one(rows, "aws:eks/nodeGroup:NodeGroup", "llmd-eks-h100")["inputs"]["capacityType"] == "SPOT"
    template = _one(rows, "aws:ec2/launchTemplate:LaunchTemplate")["inputs"]
    assert template["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-0123456789abcdef0"
    }


def _eks_pool(efa: bool = True, reservation: str | None = None) -> PoolSpec:
    machine = dataclasses.replace(MACHINES["p5.48xlarge"], efa=efa)
    return PoolSpec(key="h100", name="c-h100", machine=machine, node_count=2, reservation=reservation)


def test_eks_accelerator_node_group_runs_in_one_zone_while_the_system_group_spans_all() -> None:
    args = eks_cluster.eks_accelerator_node_group_args(
        _eks_pool(), "c", "role", ["subnet-a", "subnet-b", "subnet-c"], None, {}
    )
    assert args["subnet_ids"] == ["subnet-a"]  # a cluster placement group and EFA stay within one zone
    rows = _rows("eks-h100-efs")
    h100 = _one(rows, "aws:eks/nodeGroup:NodeGroup", "llmd-eks-h100")
    assert h100["inputs"]["subnetIds"] == ["llmd-eks-private-us-east-1a-id"]
    system = _one(rows, "aws:eks/nodeGroup:NodeGroup", "llmd-eks-system")
    assert system["inputs"]["subnetIds"] == ["llmd-eks-private-us-east-1a-id", "llmd-eks-private-us-east-1b-id"]


def test_eks_launch_template_only_for_efa_or_a_reservation() -> None:
    assert eks_cluster.eks_launch_template_args(_eks_pool(efa=False), "sg", None) is None
    efa = eks_cluster.eks_launch_template_args(_eks_pool(), "sg", "placement")
    assert efa == {
        "network_interfaces": [{"device_index": 0, "interface_type": "efa", "security_groups": ["sg"]}],
        "placement": {"group_name": "placement"},
    }
    reserved = eks_cluster.eks_launch_template_args(_eks_pool(efa=False, reservation="cr-1"), "sg", None)
    assert reserved == {
        "capacity_reservation_specification": {"capacity_reservation_target": {"capacity_reservation_id": "cr-1"}}
    }
    template = _one(_rows("eks-h100-efs"), "aws:ec2/launchTemplate:LaunchTemplate")
    assert template["inputs"]["placement"] == {"groupName": "llmd-eks-h100"}
    assert "aws:ec2/placementGroup:PlacementGroup::llmd-eks-h100" in template["dependsOn"]


def test_gke_node_pools_repair_and_upgrade_their_nodes() -> None:
    pools = [r for r in _rows("gke-h100-lustre") if r["type"] == "gcp:container/nodePool:NodePool"]
    assert {p["name"] for p in pools} == {"llmd-gke-h100", "llmd-gke-system"}
    for pool in pools:
        assert pool["inputs"]["management"] == {"autoRepair": True, "autoUpgrade": True}, pool["name"]


def test_the_nvidia_device_plugin_runs_on_every_gpu_pool() -> None:
    spare = {"machine_type": "p5.48xlarge", "node_count": 1, "taints": [{"key": "team", "value": "ml"}]}
    config = loading.build("eks-h100-efs", {"node_pools": {"spare": spare}})
    rows = resources(render(plan(config), "two-pools"))
    plugin = _one(rows, "kubernetes:helm.sh/v4:Chart", "llmd-nvidia-device-plugin-chart")["inputs"]["values"]
    [term] = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "llm-d.ai/node-pool", "operator": "In", "values": ["h100", "spare"]}]}
    assert {"key": "team", "operator": "Exists", "effect": "NoSchedule"} in plugin["tolerations"]
    assert "nodeSelector" not in plugin
    # GKE installs its own plugin with the driver.
    assert not [r for r in _rows("gke-h100-lustre") if "nvidia-device-plugin" in r["name"]]


def _on_described_pool(preset: str, host_memory: str) -> StackConfig:
    # Labelled, so the per-node daemon can be placed beside the model servers.
    labels = {"nvidia.com/gpu.present": "true"}
    pool = {"gpu": {"accelerator": "gpu", "accelerators_per_node": 8, "host_memory": host_memory, "labels": labels}}
    return loading.build(
        preset, {"cluster": {"provider": "existing"}, "node_pools": pool, "cache": {"node_pool": "gpu"}}
    )


@pytest.mark.parametrize(
    ("preset", "tight_host"),
    [("gpu-vllm-lmcache-server", "48GiB"), ("gpu-vllm-mooncake-store-fs", "128GiB")],
)
def test_the_fit_check_counts_the_per_node_daemon(preset: str, tight_host: str) -> None:
    """The LMCache server and the Mooncake Client run once per node beside the model servers."""
    stack = plan(_on_described_pool(preset, "256GiB"))
    client = client_of(stack.sizing)
    daemon = client.memory_request if client else lmcache.server_memory(stack.sizing.cpu_tier_per_pod)[0]
    assert daemon.bytes >= 20 * GiB
    assert stack.fit is not None
    assert stack.fit.per_node == stack.sizing.pod_memory * stack.fit.pods_per_node + daemon
    # A node whose allocatable memory holds the pods but not the daemon beside them is refused.
    allocatable = allocatable_memory(ByteSize.parse(tight_host))
    assert stack.sizing.pod_memory * stack.fit.pods_per_node < allocatable < stack.fit.per_node
    with pytest.raises(ConfigError, match="per-node daemon"):
        plan(_on_described_pool(preset, tight_host))


@pytest.mark.parametrize("policies", ["true", "false"])
def test_created_clusters_enforce_network_policies_whatever_the_switch(policies: str) -> None:
    """The stack's NetworkPolicies change nothing on a plugin that ignores them: created clusters get the
    enforcing one (GKE Dataplane V2, the EKS VPC CNI's policy agent). It does not follow the switch, since
    GKE fixes the datapath at creation and a toggle would replace the cluster."""
    switch = f"network_policies.enabled={policies}"
    gke = _one(_rows("gke-h100-lustre", switch), "gcp:container/cluster:Cluster")["inputs"]
    assert gke["datapathProvider"] == "ADVANCED_DATAPATH"
    assert "networkPolicy" not in gke  # Dataplane V2 enforces by itself; the Calico add-on conflicts with it
    eks = _rows("eks-h100-efs", switch)
    cni = _one(eks, "aws:eks/addon:Addon", "llmd-eks-vpc-cni")["inputs"]
    assert cni["addonName"] == "vpc-cni"
    assert json.loads(cni["configurationValues"]) == {"enableNetworkPolicy": "true"}
    assert cni["resolveConflictsOnCreate"] == "OVERWRITE"  # takes over the CNI EKS installs by itself


@pytest.mark.parametrize("protect", ["true", "false"])
def test_eks_deletion_protection_follows_protect(protect: str) -> None:
    cluster = _one(_rows("eks-h100-efs", f"protect={protect}"), "aws:eks/cluster:Cluster")["inputs"]
    assert cluster["deletionProtection"] is (protect == "true")
