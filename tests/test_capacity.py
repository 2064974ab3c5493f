"""Every capacity computation at its boundary: exactly enough fits, one byte, device, pod or node short does
not, with and without a per-node daemon and the image pre-pull's requests beside the model servers."""

from __future__ import annotations

import dataclasses

import pytest

from components.specs import lmcache, prepull
from components.specs.connectors.mooncake_store import client_of
from components.units import ByteSize, GiB, MiB
from stacks.config import StackConfig, loading
from stacks.config.errors import ConfigError
from stacks.planning import hardware, rollout_choice
from stacks.planning.plan import plan
from stacks.planning.rollout_choice import Capacity, capacity

HOST = ByteSize(256 * GiB)


def _pool(devices: int | None = 8, nodes: int = 2, host: ByteSize | None = HOST) -> hardware.PoolHardware:
    return hardware.PoolHardware("gpu", "gpu", devices, host, nodes, None)


def _allocatable() -> ByteSize:
    allocatable = _pool().allocatable
    assert allocatable is not None
    return allocatable


def test_allocatable_memory_at_each_reservation_band() -> None:
    eviction = 100 * MiB
    assert hardware.allocatable_memory(ByteSize(4 * GiB)).bytes == int(4 * GiB * 0.75 - eviction)
    assert hardware.allocatable_memory(ByteSize(8 * GiB)).bytes == int(8 * GiB - (GiB + 0.8 * GiB) - eviction)
    at_128 = 0.25 * 4 * GiB + 0.20 * 4 * GiB + 0.10 * 8 * GiB + 0.06 * 112 * GiB
    assert hardware.allocatable_memory(ByteSize(128 * GiB)).bytes == int(128 * GiB - at_128 - eviction)
    assert hardware.allocatable_memory(ByteSize(129 * GiB)).bytes == int(129 * GiB - at_128 - 0.02 * GiB - eviction)


@pytest.mark.parametrize(("devices", "pods"), [(1, 8), (3, 2), (4, 2), (5, 1), (8, 1)])
def test_pods_per_node_is_the_devices_that_fit_rounded_down(devices: int, pods: int) -> None:
    assert hardware.pods_per_node(_pool(), devices) == pods


def test_a_pod_of_exactly_a_nodes_devices_fits_one_more_does_not() -> None:
    assert hardware.pods_per_node(_pool(devices=8), 8) == 1
    with pytest.raises(ConfigError, match="a pod needs 9 devices, a node of node pool gpu has 8"):
        hardware.pods_per_node(_pool(devices=8), 9)
    assert hardware.pods_per_node(_pool(devices=None), 64) == 1  # devices not described: one pod a node


def test_exactly_the_pools_pods_fit_one_more_does_not() -> None:
    hardware.check_capacity(_pool(nodes=2), pods=4, per_node=2)
    with pytest.raises(ConfigError, match=r"cache\.replicas = 5: 5 pods need 3 nodes of node pool gpu, which has 2"):
        hardware.check_capacity(_pool(nodes=2), pods=5, per_node=2)
    hardware.check_capacity(_pool(devices=None, nodes=1), pods=5, per_node=1)  # devices not described: no check


@pytest.mark.parametrize("daemon", [ByteSize(0), ByteSize(20 * GiB)])
def test_memory_that_exactly_fills_a_node_fits_one_byte_more_does_not(daemon: ByteSize) -> None:
    allocatable = _allocatable()
    per_pod = ByteSize((allocatable.bytes - daemon.bytes) // 2)
    filled = daemon + ByteSize(allocatable.bytes - daemon.bytes - per_pod.bytes * 2)  # the odd byte, if any
    assert per_pod * 2 + filled == allocatable
    assert hardware.check_memory(_pool(), per_pod, 2, filled, "t") == hardware.Fit(2, allocatable, allocatable)
    with pytest.raises(ConfigError) as caught:
        hardware.check_memory(_pool(), per_pod + ByteSize(1), 2, daemon, "t")
    assert ("per-node daemon" in str(caught.value)) == bool(daemon.bytes)
    assert "allocatable of node pool gpu" in str(caught.value)


def test_a_daemon_that_leaves_the_pods_one_byte_short_is_refused() -> None:
    allocatable = _allocatable()
    per_pod = ByteSize((allocatable.bytes - GiB) // 2)
    daemon = ByteSize(allocatable.bytes - per_pod.bytes * 2 + 1)
    with pytest.raises(ConfigError, match="per-node daemon"):
        hardware.check_memory(_pool(), per_pod, 2, daemon, "t")
    assert hardware.check_memory(_pool(host=None), per_pod, 2, daemon, "t").allocatable is None  # not described


@pytest.mark.parametrize("daemon", [ByteSize(0), ByteSize(20 * GiB)])
@pytest.mark.parametrize("pods", [1, 2])
def test_tier_auto_is_the_largest_step_that_fits_exactly(daemon: ByteSize, pods: int) -> None:
    """A 37-step tier whose pods and daemon fill the node to the byte is chosen; one byte more gets 36."""
    allocatable, step = _allocatable(), ByteSize(GiB)
    overhead = ByteSize((allocatable.bytes - daemon.bytes) // pods - 37 * step.bytes)
    filled = ByteSize(allocatable.bytes - (overhead + step * 37).bytes * pods)  # the daemon and any odd byte
    assert (overhead + step * 37) * pods + filled == allocatable and filled.bytes - daemon.bytes < pods

    def exactly(tier: ByteSize) -> tuple[ByteSize, ByteSize]:
        return tier + overhead, filled

    def one_byte_more(tier: ByteSize) -> tuple[ByteSize, ByteSize]:
        return tier + overhead, filled + ByteSize(1)

    assert hardware.largest_fitting_tier(_pool(), pods, exactly, step) == step * 37
    assert hardware.largest_fitting_tier(_pool(), pods, one_byte_more, step) == step * 36


def test_tier_auto_can_take_the_whole_node() -> None:
    allocatable, step = _allocatable(), ByteSize(GiB)
    largest = hardware.largest_fitting_tier(_pool(), 1, lambda tier: (tier, ByteSize(0)), step)
    assert largest == step * (allocatable.bytes // GiB)


def test_tier_auto_refuses_a_node_without_room_for_one_step() -> None:
    allocatable = _allocatable()
    with pytest.raises(ConfigError, match="'auto': even a 1 GiB tier needs"):
        hardware.largest_fitting_tier(_pool(), 1, lambda tier: (tier, allocatable), ByteSize(GiB))
    with pytest.raises(ConfigError, match="needs the host memory of node pool gpu"):
        hardware.largest_fitting_tier(_pool(host=None), 1, lambda tier: (tier, ByteSize(0)), ByteSize(GiB))


def _described(preset: str, prepulled: bool, host: str = "256GiB", nodes: int = 1) -> StackConfig:
    labels = {"gpu.example/pool": "serving"}
    pool = {
        "gpu": {
            "accelerator": "gpu",
            "accelerators_per_node": 8,
            "host_memory": host,
            "node_count": nodes,
            "labels": labels,
        }
    }
    return loading.build(
        preset,
        {
            "cluster": {"provider": "existing"},
            "node_pools": pool,
            "cache": {"node_pool": "gpu"},
            "images": {"prepull": prepulled},
        },
    )


@pytest.mark.parametrize("prepulled", [False, True])
@pytest.mark.parametrize("preset", ["gpu-vllm-native-cpu", "gpu-vllm-lmcache-server", "gpu-vllm-mooncake-store-fs"])
def test_the_fit_counts_each_per_node_daemon_and_the_prepull(preset: str, prepulled: bool) -> None:
    stack = plan(_described(preset, prepulled, "1024GiB"))
    assert stack.fit is not None
    client = client_of(stack.sizing)
    daemon = ByteSize(0)
    if client is not None:
        daemon = client.memory_request
    elif stack.config.cache.connector == "lmcache-server":
        daemon = lmcache.server_memory(stack.sizing.cpu_tier_per_pod)[0]
    if prepulled:
        daemon = daemon + prepull.MEMORY
    assert stack.fit.per_node == stack.sizing.pod_memory * stack.fit.pods_per_node + daemon


@pytest.mark.parametrize("preset", ["gpu-vllm-native-cpu", "gpu-vllm-lmcache-server", "gpu-vllm-mooncake-store-fs"])
def test_a_node_one_byte_short_of_the_prepulls_request_is_refused(preset: str) -> None:
    """Host memory whose allocatable holds the pods and daemons exactly: fits without the pre-pull, not with it."""
    fit = plan(_described(preset, False, "4096GiB")).fit
    assert fit is not None
    # Find the smallest whole-MiB host whose allocatable holds fit.per_node, then check both sides.
    low, high = fit.per_node.bytes // MiB, 4096 * GiB // MiB
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if hardware.allocatable_memory(ByteSize(mid * MiB)) >= fit.per_node else (mid + 1, high)
    host = f"{low}MiB"
    assert hardware.allocatable_memory(ByteSize(low * MiB)) < fit.per_node + prepull.MEMORY
    fits = plan(_described(preset, False, host)).fit
    assert fits is not None and fits.per_node == fit.per_node
    with pytest.raises(ConfigError, match="per-node daemon"):
        plan(_described(preset, True, host))


@pytest.mark.parametrize("daemon", [ByteSize(0), ByteSize(20 * GiB)])
def test_rollout_capacity_by_memory_exactly_three_pods_or_one_byte_short(daemon: ByteSize) -> None:
    allocatable = _allocatable()
    third = ByteSize((allocatable.bytes - daemon.bytes) // 3)
    assert capacity(_pool(), 1, 1, third, daemon) == Capacity(2 * 3, 8, 3)
    assert capacity(_pool(), 1, 1, third + ByteSize(1), daemon).by_memory == 2


def test_rollout_capacity_is_the_smaller_of_devices_and_memory_per_node() -> None:
    allocatable = _allocatable()
    assert capacity(_pool(), 4, 1, ByteSize(allocatable.bytes // 3), ByteSize(0)) == Capacity(4, 2, 3)
    assert capacity(_pool(), 2, 1, ByteSize(allocatable.bytes // 3), ByteSize(0)) == Capacity(6, 4, 3)
    assert capacity(_pool(host=None), 2, 1, ByteSize(GiB), ByteSize(0)) == Capacity(8, 4, None)
    assert capacity(_pool(), 1, 1, allocatable + ByteSize(1), ByteSize(0)) == Capacity(0, 8, 0)


def test_rollout_capacity_of_multi_host_groups_is_whole_slices_where_a_pod_fits() -> None:
    allocatable = _allocatable()
    pool = _pool(devices=4, nodes=5)
    assert capacity(pool, 4, 2, allocatable, ByteSize(0)) == Capacity(2, 1, 1)  # 5 nodes: 2 slices
    assert capacity(pool, 4, 2, allocatable + ByteSize(1), ByteSize(0)) == Capacity(0, 1, 0)


@pytest.mark.parametrize("roles", [1, 2])
def test_surge_exactly_when_one_more_pod_per_role_fits(roles: int) -> None:
    replicas = 3
    room = Capacity(replicas * roles + roles, 8, 8)
    short = dataclasses.replace(room, units=room.units - 1)
    surging = rollout_choice.choose(replicas, roles, 1, room, None, tier_auto=False)
    assert (surging.max_surge, surging.max_unavailable) == (1, 0)
    one_by_one = rollout_choice.choose(replicas, roles, 1, short, None, tier_auto=False)
    assert (one_by_one.max_surge, one_by_one.max_unavailable) == (0, 1)
    unknown = rollout_choice.choose(replicas, roles, 1, None, None, tier_auto=False)
    assert (unknown.max_surge, unknown.max_unavailable) == (0, 1)
