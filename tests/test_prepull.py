"""The image pre-pull DaemonSet (`images.prepull`): what it pulls, where it runs, how it rolls and what waits on it."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from components.catalog import startup_figures as figures
from components.catalog import versions
from components.specs import images, lmcache, mooncake, prepull
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning import cold_starts
from stacks.planning.plan import StackPlan, plan
from stacks.review import cold_start_table
from tests.helpers import by_kind, manifests, rendered, resources

# The P/D stack with a described H100 pool and the LMCache server DaemonSet on its nodes.
PD_ON_A_POOL = (
    "node_pools.h100.accelerator=gpu",
    "node_pools.h100.accelerators_per_node=8",
    "node_pools.h100.host_memory=2TiB",
    "node_pools.h100.labels.pool=h100",
    "node_pools.h100.taints=[{key: dedicated, value: inference, effect: NoSchedule}]",
    "cache.node_pool=h100",
    "images.prepull=true",
)


def _plan(name: str, *overrides: str) -> StackPlan:
    return plan(loading.load_preset(name, list(overrides)))


def _daemon_set(stack_plan: StackPlan) -> dict[str, Any]:
    (found,) = by_kind(stack_plan.manifests(prepull.WORKLOAD), "DaemonSet")
    return found


def _pod(stack_plan: StackPlan) -> dict[str, Any]:
    spec: dict[str, Any] = _daemon_set(stack_plan)["spec"]["template"]["spec"]
    return spec


def _pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for o in objects:
        spec = o.get("spec") or {}
        if "template" in spec:
            out.append(spec["template"]["spec"])
        for key in ("leaderTemplate", "workerTemplate"):
            if key in (spec.get("leaderWorkerTemplate") or {}):
                out.append(spec["leaderWorkerTemplate"][key]["spec"])
    return out


def _images_of(objects: list[dict[str, Any]]) -> set[str]:
    return {
        c["image"] for pod in _pod_specs(objects) for c in [*pod.get("initContainers", []), *pod.get("containers", [])]
    }


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("existing-mi300", ()),
        ("gpu-vllm-lmcache-server-pd", PD_ON_A_POOL),
        ("tpu-v7-vllm-native-cpu-multi-host", ("images.prepull=true",)),
        ("gke-h100-lustre", ("images.prepull=true",)),
    ],
)
def test_it_pulls_every_image_the_serving_nodes_run_and_nothing_else(name: str, overrides: tuple[str, ...]) -> None:
    stack_plan = _plan(name, *overrides)
    on_serving_nodes = [m for r in stack_plan.roles for m in r.manifests]
    on_serving_nodes += stack_plan.manifests(lmcache.SERVER_WORKLOAD) + stack_plan.manifests(mooncake.CLIENT_WORKLOAD)
    assert set(prepull.pulled_images(stack_plan.manifests(prepull.WORKLOAD))) == _images_of(on_serving_nodes)


def test_p_d_pulls_both_roles_the_sidecar_and_the_lmcache_server() -> None:
    pulled = prepull.pulled_images(_plan("gpu-vllm-lmcache-server-pd", *PD_ON_A_POOL).manifests(prepull.WORKLOAD))
    assert versions.disagg_sidecar_image(versions.ROUTER_VERSION) in pulled
    assert versions.lmcache_image(versions.LMCACHE_VERSION) in pulled


def _tolerated(taint: dict[str, str], tolerations: list[dict[str, str]]) -> bool:
    """Kubernetes' toleration match: same key (or any key with Exists and no key), Exists or equal value,
    same effect or any."""
    for t in tolerations:
        key_ok = t.get("key") == taint["key"] or (not t.get("key") and t.get("operator") == "Exists")
        value_ok = t.get("operator") == "Exists" or t.get("value") == taint.get("value")
        effect_ok = not t.get("effect") or t["effect"] == taint["effect"]
        if key_ok and value_ok and effect_ok:
            return True
    return False


@pytest.mark.parametrize(
    ("name", "overrides", "device"),
    [
        ("existing-mi300", (), "amd.com/gpu"),
        ("gpu-vllm-lmcache-server-pd", PD_ON_A_POOL, "nvidia.com/gpu"),
        ("tpu-v7-vllm-native-cpu-multi-host", ("images.prepull=true",), "google.com/tpu"),
    ],
)
def test_it_lands_on_every_node_the_model_servers_can(name: str, overrides: tuple[str, ...], device: str) -> None:
    """A node of the pool: the labels the serving pods select, the pool's taints and the device taint GKE
    and the GPU operators put on accelerator nodes (the serving pods tolerate it through the devices
    they request; the pre-pull pod requests none)."""
    stack_plan = _plan(name, *overrides)
    (serving,) = _pod_specs([stack_plan.model_server_manifests[-1]])[:1]
    node_labels = dict(serving.get("nodeSelector") or {})
    assert node_labels, "the serving pods are placed"
    taints = [{k: v for k, v in t.items() if k != "operator"} for t in serving.get("tolerations") or []]
    taints.append({"key": device, "value": "present", "effect": "NoSchedule"})
    pod = _pod(stack_plan)
    assert pod["nodeSelector"].items() <= node_labels.items()
    assert all(_tolerated(t, pod["tolerations"]) for t in taints), (taints, pod["tolerations"])


def test_the_pool_taints_are_tolerated_as_described() -> None:
    pod = _pod(_plan("gpu-vllm-lmcache-server-pd", *PD_ON_A_POOL))
    assert _tolerated({"key": "dedicated", "value": "inference", "effect": "NoSchedule"}, pod["tolerations"])
    assert not _tolerated({"key": "dedicated", "value": "training", "effect": "NoSchedule"}, pod["tolerations"])


def test_every_pull_runs_the_copied_static_tool_not_the_images_shell() -> None:
    """Images without /bin/sh (the distroless P/D sidecar) are pulled too: each runs the busybox the
    first init container copies in, from the statically linked variant (busybox's default glibc build
    links dynamically and would not run inside another image)."""
    pod = _pod(_plan("gpu-vllm-lmcache-server-pd", *PD_ON_A_POOL))
    first, *pulls = pod["initContainers"]
    assert first["image"] == versions.STATIC_BUSYBOX_IMAGE and first["image"].endswith("-uclibc")
    assert first["command"][-1] == prepull.TOOL
    assert pulls and all(c["command"] == [prepull.TOOL, "true"] for c in pulls)
    tool_mounts = {"name": prepull.TOOL_VOLUME, "mountPath": prepull.TOOL_DIR}
    assert all(tool_mounts in c["volumeMounts"] for c in [first, *pulls])
    assert [c["image"] for c in pod["containers"]] == [versions.PAUSE_IMAGE]


def test_it_updates_every_node_at_once_and_is_awaited_for_the_serial_pulls() -> None:
    stack_plan = _plan("existing-mi300")
    daemon_set = _daemon_set(stack_plan)
    assert daemon_set["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == "100%"
    pulled = images.images([daemon_set])
    pull_seconds = sum(cold_starts.image_bytes(i) for i in pulled) / figures.PULL_BYTES_PER_SECOND
    assert int(daemon_set["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) > pull_seconds
    (budget,) = [b for b in stack_plan.budgets if b.workload == prepull.NAME]
    assert budget.waves == 1


def test_every_image_the_presets_pull_has_a_size_in_the_catalog() -> None:
    """An image missing from the catalog is budgeted as the largest (20 GB): a pre-pull of a small sidecar
    would wait minutes for nothing."""
    for name in loading.preset_names():
        stack_plan = _plan(name, "images.mirror=off")
        every = [m for r in stack_plan.roles for m in r.manifests] + stack_plan.manifests(lmcache.SERVER_WORKLOAD)
        every += (
            stack_plan.manifests(mooncake.CLIENT_WORKLOAD)
            + stack_plan.manifests(mooncake.MASTER_WORKLOAD)
            + stack_plan.manifests(prepull.WORKLOAD)
        )
        for image in images.images(every):
            assert cold_starts.known_image_bytes(image) is not None, f"{name}: {image}"


def test_model_servers_start_after_it_and_it_waits_for_nothing_of_theirs() -> None:
    rows = resources(rendered("existing-mi300"))
    (daemon_set,) = [r for r in rows if r["type"] == "kubernetes:apps/v1:DaemonSet" and "prepull" in r["name"]]
    urn = f"{daemon_set['type']}::{daemon_set['name']}"
    servers = [r for r in rows if r["type"] == "kubernetes:apps/v1:Deployment" and "model-server" in r["name"]]
    assert servers and all(urn in s["dependsOn"] for s in servers)
    assert not any("model-server" in d for d in daemon_set["dependsOn"])


def test_through_the_mirror_on_a_created_cluster() -> None:
    stack_plan = _plan("gke-h100-lustre", "images.prepull=true")
    assert stack_plan.mirror is not None
    prefix = f"{stack_plan.mirror.region}-docker.pkg.dev/{stack_plan.mirror.project}/"
    assert all(i.startswith(prefix) for i in images.images(stack_plan.manifests(prepull.WORKLOAD)))
    assert "registry.k8s.io" in stack_plan.mirror.registries  # the pause image's registry gets its repository


def test_nothing_may_connect_to_it_from_its_first_pod() -> None:
    objects = manifests(rendered("existing-mi300"))
    policies = [p for p in by_kind(objects, "NetworkPolicy") if p["metadata"]["name"] == f"{prepull.NAME}-ingress"]
    (policy,) = policies
    assert policy["spec"]["podSelector"]["matchLabels"] == prepull.LABELS
    assert policy["spec"]["ingress"] == []
    rows = resources(rendered("existing-mi300"))
    (daemon_set,) = [r for r in rows if r["type"] == "kubernetes:apps/v1:DaemonSet" and "prepull" in r["name"]]
    assert any(d.startswith("kubernetes:networking.k8s.io/v1:NetworkPolicy::") for d in daemon_set["dependsOn"])


def test_its_memory_counts_in_the_fit_per_node() -> None:
    on, off = _plan("existing-b60"), _plan("existing-b60", "images.prepull=false")
    assert on.fit is not None and off.fit is not None
    assert (on.fit.per_node - off.fit.per_node).bytes == prepull.MEMORY.bytes


def test_unplaced_model_servers_are_refused_in_one_line() -> None:
    """Unplaced: no pool, and a device no other profile requests (an NVIDIA GPU's pods require its product)."""
    with pytest.raises(ConfigError) as caught:
        _plan("amd-vllm-native-cpu", "images.prepull=true")
    message = str(caught.value)
    assert message.startswith("invalid stack config: images.prepull = True: needs the model servers placed")
    assert "\n" not in message
    with pytest.raises(ConfigError) as caught:
        _plan("existing-b60", "node_pools.b60.labels={}")
    assert str(caught.value) == (
        "invalid stack config: images.prepull = True: needs the model servers' node pool b60 to select its nodes"
        " by label (node_pools.b60.labels): unplaced, the DaemonSet would pull every image onto every node"
    )


def test_the_first_pod_finds_its_image_and_the_summary_says_so() -> None:
    summary = rendered("existing-mi300").summary
    assert "| first pod (empty caches) | pre-pulled by `image-prepull` |" in summary
    assert "`ghcr.io/llm-d/llm-d-rocm:v0.9.0` pre-pulled onto every node of the serving pool" in summary
    assert "`images.prepull` (with `cache.node_pool`) would pull" in rendered("amd-vllm-native-cpu").summary
    assert "`images.prepull: true` pulls them onto the serving pool's nodes" in rendered("gpu-vllm-native-cpu").summary


def test_model_servers_placed_by_their_gpu_product_alone_are_pre_pulled_there() -> None:
    """No pool on an existing cluster, but an H100's pods require GPU Feature Discovery's product: the DaemonSet
    goes to those nodes, as they do."""
    [daemon_set] = by_kind(_plan("gpu-vllm-native-cpu", "images.prepull=true").manifests(prepull.WORKLOAD), "DaemonSet")
    pod = daemon_set["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod
    assert pod["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
                        ]
                    }
                ]
            }
        }
    }


def test_off_by_default_and_where_a_mirror_serves_the_cluster() -> None:
    for name in ("gpu-vllm-native-cpu", "gke-h100-lustre", "eks-h100-efs", "tpu-v6-vllm-native-cpu"):
        assert _plan(name).manifests(prepull.WORKLOAD) == []


def test_a_rollout_waits_for_one_parallel_pull_instead_of_one_per_wave() -> None:
    waves, ahead = cold_start_table.rollout_pulls(_plan("existing-mi300"))
    assert _plan("existing-mi300").model_server.replicas == 2
    whole = math.ceil(cold_starts.image_bytes(versions.VLLM_ROCM_IMAGE) / figures.PULL_BYTES_PER_SECOND)
    assert waves == 2 * whole
    assert ahead is not None and whole <= ahead < waves  # the ROCm image and two small ones, once
    assert cold_start_table.rollout_pulls(_plan("existing-mi300", "images.prepull=false"))[1] is None


@pytest.mark.parametrize(
    "image",
    [
        "docker.io/vllm/vllm-openai:v0.26.0",
        "ghcr.io/llm-d/llm-d-router-disagg-sidecar@sha256:" + "a" * 64,
        "registry.example.com:5000/Team/My_Image:1",
        "example.com/" + "x" * 120 + ":1",
        "example.com/___:1",
    ],
)
def test_every_pull_container_name_is_a_dns_label(image: str) -> None:
    """The API server rejects a container name that is not a DNS label: whatever `cache.image` says."""
    for index in (1, 12):
        name = prepull.container_name(index, image)
        assert len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name
