"""The LMCache server integration (LMCache MP): one LMCache server per node holds the CPU tier; the vLLM
pods reach it through LMCacheMPConnector, for prefix reuse or P/D disaggregation (a prefill and a decode
role, over NIXL)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from components.catalog import versions
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.manifest import Manifest
from components.specs import lmcache, monitoring
from components.specs.connectors.interface import Choice, DaemonInputs, Problem, RouterProfile, SizingInputs
from components.specs.connectors.lmcache_connector import LMCACHE_METRICS
from components.specs.connectors.vllm_family import VLLM_HBM_EVENTS, VllmConnector
from components.specs.kv_events import TierEvents
from components.specs.network import Rule, StackTraffic, policy
from components.specs.servers.lmcache_mp import lmcache_mp_manifests
from components.specs.sizing import SHM_HEADROOM, Derivation, Sizes, TierSizing, sized
from components.specs.startup import AwaitBudget
from components.specs.workloads import NAMESPACE, Await, Workload
from components.units import ByteSize

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec

# Guide labels of the LMCache integration's model servers (the router selects them).
LMCACHE_GUIDES = {"prefix-reuse": "lmcache", "pd": "lmcache-pd"}


def size_client_pods(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, l1_per_node: ByteSize
) -> TierSizing:
    """vLLM pods of the LMCache server: the CPU tier is the server's L1 on each node, shared by its pods.

    The pods hold no tier themselves; the router scores token blocks and does not count the tier.
    """
    server_request, server_limit = lmcache.server_memory(l1_per_node)
    pods = sized(
        model,
        accelerator,
        tensor_parallelism,
        l1_per_node,
        [("/dev/shm", SHM_HEADROOM)],
        SHM_HEADROOM,
        Sizes(),
        [
            Derivation(
                "LMCache server L1 per node (`--l1-size-gb`)", l1_per_node.human(), "stack config `cache.tier.cpu`"
            ),
            Derivation(
                "LMCache server memory request / limit",
                f"{server_request.quantity()} / {server_limit.quantity()}",
                lmcache.server_memory_formula(),
            ),
        ],
    )
    return dataclasses.replace(pods, router_counts_tier=False)


# The node's LMCache server: LMCache's own LMCacheMPConnector reports the L1's stores and evictions, but the L1 is
# the node's, shared by its pods: an event names the pod whose request stored a block, not every pod that loads it.
LMCACHE_SERVER_EVENTS = TierEvents(
    "cpu",
    "CPU",
    stores=True,
    evictions=True,
    pooled=True,
    source="LMCache 0.5.6 integration/vllm/lmcache_mp_connector.py get_kv_connector_kv_cache_events (BlockStored,"
    " BlockRemoved) over the node server's shared L1; vLLM 0.26.0's own LMCacheMPConnector.take_events yields none",
)


class LMCacheServer(VllmConnector):
    key = "lmcache-server"
    kv_connector_class = lmcache.MP_CONNECTOR_CLASS
    cpu_scope = "pooled"  # the node's L1, shared by the pods on it (modelled as one pool for all pods)
    metric_families = (LMCACHE_METRICS,)
    reads_lmcache_section = True

    def size(self, inputs: SizingInputs) -> TierSizing:
        i = inputs
        return size_client_pods(i.model, i.accelerator, i.tensor_parallelism, i.tier)

    def per_node_memory(self, sizing: TierSizing) -> ByteSize:
        return lmcache.server_memory(sizing.cpu_tier_per_pod)[0]

    def pod_cpu_tier(self, sizing: TierSizing, hosts: int) -> ByteSize:
        """None in the pod: the node's LMCache server holds the L1 (its DaemonSet carries that stamp)."""
        return ByteSize(0)

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        return choice.lmcache.chunk_size, "LMCache chunk, `lmcache.chunk_size`"

    def kv_events(self, filesystem_tier: bool) -> tuple[TierEvents, ...]:
        return (VLLM_HBM_EVENTS, LMCACHE_SERVER_EVENTS)

    def roles(self, choice: Choice) -> int:
        return 2 if choice.lmcache.mode == "pd" else 1

    def guide(self, choice: Choice) -> str:
        return LMCACHE_GUIDES[choice.lmcache.mode]

    def image(self, choice: Choice) -> str:
        return versions.lmcache_image(choice.lmcache.version)  # the client must speak the server's protocol version

    def router_profile(self, choice: Choice, replicas: int) -> RouterProfile:
        if choice.lmcache.mode == "pd":
            return "pd"
        # Prefix scoring on token blocks needs the tokenizer once there is more than one pod to choose from.
        return "token-routing" if replicas >= 2 else "default"

    def manifests(self, spec: ServerSpec) -> list[Manifest]:
        return lmcache_mp_manifests(spec)

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        raise NotImplementedError("written by servers/lmcache_mp.py with the role's NIXL side")

    def monitors(self, provider: str, namespace: str) -> list[Manifest]:
        return [monitoring.pod_monitor(provider, lmcache.NAME, namespace, lmcache.LABELS, "metrics", "30s")]

    def daemons(self, inputs: DaemonInputs) -> list[Workload]:
        lm, l1 = inputs.choice.lmcache, inputs.sizing.cpu_tier_per_pod
        settings = lmcache.LMCacheServerSettings(lm, inputs.namespace, l1)
        cold = inputs.cold_start(settings.image, l1.bytes)
        return [
            Workload(
                lmcache.SERVER_WORKLOAD,
                lmcache.server_manifests(settings),
                needs=(NAMESPACE,),
                rolls="node-by-node",
                awaited=Await(AwaitBudget(lmcache.NAME, cold, inputs.nodes), "DaemonSet", "beside"),
                ingress=server_policy,
                holds_cpu_tier=True,
                rollout=f"LMCache server DaemonSet: one node at a time; each restart drops that node's {l1.human()} L1",
            )
        ]

    def summary_rows(self, choice: Choice, sizing: TierSizing) -> list[tuple[str, str]]:
        lm = choice.lmcache
        return [
            (
                "LMCache server",
                f"DaemonSet `{lmcache.NAME}` {lm.version} on every GPU node, mode {lm.mode},"
                f" isolated IPC {lm.isolated_ipc}, test mode {lm.test_mode}",
            )
        ]

    def settings_problem(self, choice: Choice) -> Problem | None:
        block = choice.accelerator.kv_block_tokens
        if choice.lmcache.chunk_size % block:
            return (
                "lmcache.chunk_size",
                choice.lmcache.chunk_size,
                f"must be a multiple of the model server's {block}-token KV block, or LMCache chunks split blocks",
            )
        return None


def server_policy(traffic: StackTraffic) -> Manifest:
    """The server admits the model servers on its ZMQ and HTTP ports, the scraper on metrics."""
    rules = [
        Rule([traffic.model_servers], [lmcache.SERVER_PORT, lmcache.HTTP_PORT]),
        Rule([traffic.scraper], [lmcache.METRICS_PORT]),
    ]
    return policy(lmcache.NAME, traffic.namespace, {"matchLabels": dict(lmcache.LABELS)}, rules)


LMCACHE_SERVER = LMCacheServer()
