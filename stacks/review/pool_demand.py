"""What the serving stacks of one cluster stack ask of each of its pools, together: each stack is checked
against the pool alone when it plans (stacks/planning/tier_fit.py); the serving stacks that share a pool
are checked here, side by side, and a misfit is one line naming the pool, every stack's share and the
pool's capacity.

For a pool of N nodes of G devices and A allocatable memory, each serving stack s on it asks
  P_s pods      = sum over its model-server roles of replicas x group_size, where replicas is autoscaling's
                  max_replicas when KEDA scales it (the most it may reach), else cache.replicas
  d_s, m_s      devices and memory of a pod; D_s its per-node daemons' memory (the connector's DaemonSets and
                the image pre-pull), which run on EVERY node of the pool: they select the pool's nodes, not
                the nodes the stack's own pods landed on
  k_s           = min(G // d_s, (A - sum_t D_t) // m_s) pods of s a node holds beside all stacks' daemons
  devices_s     = sum over its pods of d_s; nodes_s = ceil(P_s / k_s); memory a node: m_s x min(k_s, P_s) + D_s
and together they fit when
  1. every pod fits a node beside all stacks' daemons (k_s >= 1),
  2. sum_s devices_s <= G x N, and
  3. nodes needed <= N, where nodes needed is the fewer of two placements that both exist: each stack on
     nodes of its own (sum_s nodes_s: sound, but two stacks of half a node each would take two), and a
     first-fit-decreasing placement of every pod (by devices, then memory) on nodes of G devices and
     A - sum_t D_t memory (stacks share nodes). Being a placement, either is sound (no false fit); taking
     the fewer is never more pessimistic than each stack on nodes of its own.
Then the same during each stack's rollout, one at a time (`rollout_misfit`): its surge pods (maxSurge units
per role, sized by its plan to the pool alone) beside every stack's pods. Alone (one stack), these are the
stack's own fit checks, so a stack that plans passes. A pool whose devices
per node are not known is not checked (the stack's own check skips it too); a TPU slice's topology (a
replica's hosts in one slice) is not modeled beyond the node count.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from components.units import ByteSize, GiB
from stacks.config.providers import provider_of
from stacks.planning import hardware
from stacks.planning.plan import StackPlan


@dataclass(frozen=True)
class Demand:
    """One serving stack's share of a pool."""

    stack: str
    pods: list[tuple[int, int]]  # (devices, memory bytes) of each pod
    daemon: int  # bytes of per-node daemons, on every node of the pool
    autoscaled: int | None  # autoscaling's max_replicas, where KEDA scales the stack
    surge: list[tuple[int, int]] = dataclasses.field(default_factory=list)  # pods its rollout adds first

    def rolling(self) -> Demand:
        """This stack mid-rollout: its surge pods beside the ones they replace."""
        return dataclasses.replace(self, pods=[*self.pods, *self.surge], surge=[])

    @property
    def devices(self) -> int:
        return sum(d for d, _ in self.pods)

    def pods_per_node(self, pool: hardware.PoolHardware, room: int | None) -> int:
        """k_s: pods of this stack a node holds, by devices and by the memory left beside every daemon."""
        most_devices = max(d for d, _ in self.pods)
        most_memory = max(m for _, m in self.pods)
        by_devices = (pool.devices_per_node or 0) // most_devices if most_devices else len(self.pods)
        by_memory = room // most_memory if room is not None and most_memory else by_devices
        return max(0, min(by_devices, by_memory))

    def share(self, per_node: int) -> str:
        nodes = math.ceil(len(self.pods) / per_node) if per_node else 0
        memory = ByteSize(max(m for _, m in self.pods) * min(per_node, len(self.pods)) + self.daemon)
        scaled = f"; autoscaling's {self.autoscaled} replicas" if self.autoscaled is not None else ""
        counts = f"{_count(self.devices, 'device')}, {_count(nodes, 'node')}"
        return f"{self.stack} ({counts}, {memory.ceil_to(GiB).quantity()} a node{scaled})"


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def demand(name: str, stack_plan: StackPlan) -> Demand:
    """What a serving stack asks of its pool (cache.node_pool)."""
    auto = stack_plan.autoscaling
    pods: list[tuple[int, int]] = []
    memory = stack_plan.sizing.pod_memory.bytes
    for role in stack_plan.roles:
        replicas = auto.max_replicas if auto is not None else role.spec.replicas
        pods += [(role.spec.devices, memory)] * (replicas * role.spec.group_size)
    fit = stack_plan.fit
    daemon = fit.per_node.bytes - memory * fit.pods_per_node if fit is not None else 0
    rollout = stack_plan.rollout
    surge: list[tuple[int, int]] = []
    if rollout is not None and rollout.surges:  # one extra unit per role, each of group_size pods
        for role in stack_plan.roles:
            surge += [(role.spec.devices, memory)] * (rollout.max_surge * role.spec.group_size)
    return Demand(name, pods, max(0, daemon), auto.max_replicas if auto is not None else None, surge)


def _first_fit(demands: list[Demand], devices_per_node: int, room: int | None, limit: int) -> int:
    """Nodes a first-fit-decreasing placement of every pod takes (limit + 1 once it takes more than limit)."""
    free: list[list[int]] = []  # each node's devices and memory left
    for devices, memory in sorted((p for d in demands for p in d.pods), reverse=True):
        for node in free:
            if node[0] >= devices and (room is None or node[1] >= memory):
                node[0] -= devices
                node[1] -= memory
                break
        else:
            if len(free) == limit:
                return limit + 1
            free.append([devices_per_node - devices, (room or 0) - memory])
    return len(free)


def _names(shares: list[str]) -> str:
    return shares[0] if len(shares) == 1 else f"{', '.join(shares[:-1])} and {shares[-1]}"


def pool_misfit(pool_key: str, cluster: str, pool: hardware.PoolHardware, demands: list[Demand]) -> str | None:
    """The one line when the demands do not fit the pool together, else None."""
    if pool.devices_per_node is None or not demands:
        return None
    allocatable = pool.allocatable.bytes if pool.allocatable is not None else None
    daemons = sum(d.daemon for d in demands)
    room = allocatable - daemons if allocatable is not None else None
    per_node = {d.stack: d.pods_per_node(pool, room) for d in demands}
    shares = _names([d.share(per_node[d.stack]) for d in demands])
    together = "together ask" if len(demands) > 1 else "asks"
    head = f"node_pools.{pool_key} of {cluster}: {shares} {together}"
    capacity = f"{_count(pool.nodes, 'node')} x {pool.devices_per_node}"
    crowded = [d for d in demands if per_node[d.stack] == 0]
    if crowded and allocatable is not None:
        pod = ByteSize(max(m for _, m in crowded[0].pods)).ceil_to(GiB).quantity()
        daemon_text = ByteSize(daemons).ceil_to(GiB).quantity()
        return (
            f"{head} {daemon_text} of per-node daemons on every node; a {crowded[0].stack} pod ({pod}) does not"
            f" fit beside them in the {ByteSize(allocatable).floor_to(GiB).quantity()} allocatable of a node"
        )
    devices = sum(d.devices for d in demands)
    if devices > pool.devices_per_node * pool.nodes:
        return f"{head} {devices} devices; the pool has {pool.devices_per_node * pool.nodes} ({capacity})"
    own = sum(math.ceil(len(d.pods) / per_node[d.stack]) for d in demands)
    shared = _first_fit(demands, pool.devices_per_node, room, pool.nodes)
    needed = min(own, shared)
    if needed > pool.nodes:
        memory = f", {ByteSize(allocatable).floor_to(GiB).quantity()} allocatable each" if allocatable else ""
        need_word = "together need" if len(demands) > 1 else "needs"
        return (
            f"node_pools.{pool_key} of {cluster}: {shares} {need_word} {needed} nodes; the pool has {pool.nodes}"
            f" ({capacity} devices{memory})"
        )
    return None


def misfits(plans: Mapping[str, StackPlan]) -> list[str]:
    """One line per pool of a cluster stack that its serving stacks (`cluster.provider: stack`) overfill
    together; `plans` may hold any stacks' plans (the others are skipped)."""
    groups: dict[tuple[str, str], list[tuple[str, StackPlan]]] = {}
    for name, stack_plan in sorted(plans.items()):
        config = stack_plan.config
        if (
            not provider_of(config).reads_cluster_stack
            or config.cluster.stack is None
            or config.cache.node_pool is None
        ):
            continue
        groups.setdefault((config.cluster.stack, config.cache.node_pool), []).append((name, stack_plan))
    out = []
    for (reference, key), members in sorted(groups.items()):
        pool = hardware.pool_hardware(members[0][1].config, key)
        line = rollout_misfit(key, reference.rsplit("/", 1)[-1], pool, [demand(n, p) for n, p in members])
        if line is not None:
            out.append(line)
    return out


def rollout_misfit(pool_key: str, cluster: str, pool: hardware.PoolHardware, demands: list[Demand]) -> str | None:
    """The pool at rest, then during each stack's rollout (one stack rolls at a time: each `pulumi up` is its
    own): a stack whose surge was sized to the pool alone can find the room taken by another stack, and its
    rollout (maxUnavailable 0) would then wait on a Pending pod until `pulumi up` times out."""
    line = pool_misfit(pool_key, cluster, pool, demands)
    if line is not None or len(demands) == 1:
        return line
    for i, rolling in enumerate(demands):
        if not rolling.surge:
            continue
        during = [*demands[:i], rolling.rolling(), *demands[i + 1 :]]
        line = pool_misfit(pool_key, cluster, pool, during)
        if line is not None:
            return (
                f"{line}, during {rolling.stack}'s rollout (its surge adds {_count(len(rolling.surge), 'pod')},"
                " sized to the pool alone)"
            )
    return None
