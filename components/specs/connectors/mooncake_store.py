"""MooncakeStore: vLLM's MooncakeStoreConnector on a Mooncake master and, with the fs variant, a
per-node standalone client with node-local SSD; KV moves over RDMA between the pods."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.catalog import versions
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.manifest import Manifest
from components.specs import monitoring, mooncake
from components.specs.connectors.interface import Choice, DaemonInputs, SizingInputs, Variant
from components.specs.connectors.vllm_family import VLLM_HBM_EVENTS, VllmConnector
from components.specs.kv_events import TierEvents
from components.specs.mooncake import MOONCAKE_CLIENT_SHM, MooncakeClientSizing, mooncake_client, mooncake_text
from components.specs.network import NAMESPACE_NAME_LABEL, Peer, Rule, StackTraffic, policy
from components.specs.servers.base import empty_dir, env_var
from components.specs.sizing import SHM_HEADROOM, Derivation, Sizes, TierSizing, sized, sizes_of
from components.specs.startup import AwaitBudget
from components.specs.workloads import Await, Workload
from components.units import ByteSize, GiB

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec

MOONCAKE_CONFIG_MAP = "mooncake-store-config"
MOONCAKE_CONFIG_DIR = "/etc/mooncake"
# Each rank's private transfer buffer (`local_buffer_size`).
MOONCAKE_LOCAL_BUFFER = ByteSize(4 * GiB)


@dataclass(frozen=True)
class MooncakeSizes(Sizes):
    segment: ByteSize | None  # `global_segment_size` per rank (embedded); None: the clients hold the pool
    local_buffer: ByteSize  # `local_buffer_size`
    client: MooncakeClientSizing | None  # the per-node Mooncake Client (standalone)


def client_of(sizing: TierSizing) -> MooncakeClientSizing | None:
    """The per-node Mooncake Client a tier was sized with (None: embedded, or another connector's tier)."""
    return sizing.sizes.client if isinstance(sizing.sizes, MooncakeSizes) else None


def mooncake_store_connector(standalone: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"kv_connector": MooncakeStore.kv_connector_class, "kv_role": "kv_both"}
    if standalone:
        config["kv_connector_extra_config"] = {"load_async": True}
    return config


def size_embedded(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, replicas: int, tier_per_pod: ByteSize
) -> TierSizing:
    """Each rank contributes `global_segment_size` to one pool all pods read, so a server can hit the whole pool."""
    segment = ByteSize(tier_per_pod.bytes // tensor_parallelism)
    pool = tier_per_pod * replicas
    buffers = MOONCAKE_LOCAL_BUFFER * tensor_parallelism
    return sized(
        model,
        accelerator,
        tensor_parallelism,
        pool,
        [("segments", tier_per_pod), ("local buffers", buffers), ("/dev/shm", SHM_HEADROOM)],
        SHM_HEADROOM,
        MooncakeSizes(segment, MOONCAKE_LOCAL_BUFFER, None),
        [
            Derivation(
                "`global_segment_size` (per rank)",
                mooncake_text(segment),
                f"{tier_per_pod.human()} per pod / {tensor_parallelism} ranks",
            ),
            Derivation(
                "MooncakeStore pool (one for all pods)",
                pool.human(),
                f"{tier_per_pod.human()} x {replicas} pods; any server loads from the whole pool, so the"
                " router's per-server capacity is the pool",
            ),
        ],
    )


def size_standalone(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tensor_parallelism: int,
    replicas: int,
    client_dram: ByteSize,
    client_ssd: ByteSize,
) -> TierSizing:
    """The Mooncake Client DaemonSet owns the DRAM + SSD pool, one per node the model servers run on."""
    nodes = math.ceil(replicas * tensor_parallelism / accelerator.devices_per_node)
    client = mooncake_client(client_dram, client_ssd, nodes)
    pool = client_dram * nodes
    buffers = MOONCAKE_LOCAL_BUFFER * tensor_parallelism
    return sized(
        model,
        accelerator,
        tensor_parallelism,
        pool,
        [("local buffers", buffers), ("/dev/shm", SHM_HEADROOM)],
        SHM_HEADROOM,
        MooncakeSizes(None, MOONCAKE_LOCAL_BUFFER, client),
        [
            Derivation(
                "Mooncake Client nodes",
                str(nodes),
                f"ceil({replicas} pods x {tensor_parallelism} devices / {accelerator.devices_per_node} per node)",
            ),
            Derivation(
                "MooncakeStore DRAM pool (one for all pods)",
                pool.human(),
                f"{client_dram.human()} per client x {nodes} nodes; any server loads from the whole pool",
            ),
            Derivation("Mooncake Client SSD per node", client_ssd.human(), "stack config `cache.tier.disk`"),
            Derivation(
                "Mooncake Client memory request / limit",
                f"{client.memory_request.quantity()} / {client.memory_limit.quantity()}",
                f"DRAM {client_dram.human()} + /dev/shm {MOONCAKE_CLIENT_SHM.human()};"
                f" limit + {MOONCAKE_CLIENT_SHM.human()}",
            ),
        ],
    )


# MooncakeStore's pool: the storing pod reports what it put (stores only), and any pod loads from the pool.
MOONCAKE_EVENTS = TierEvents(
    "cpu",
    "cpu",
    stores=True,
    evictions=False,
    pooled=True,
    source="vLLM 0.26.0 and 0.27.1 mooncake/store/worker.py: BlockStored (medium cpu) from the storing pod, no"
    " BlockRemoved for what the master evicts",
)


class MooncakeStore(VllmConnector):
    key = "mooncake-store"
    kv_connector_class = "MooncakeStoreConnector"
    cpu_scope = "pooled"  # one pool of every rank's segment (or the Mooncake Clients'); any pod loads from it
    peer_traffic = True  # the pods read each other's segments

    def size(self, inputs: SizingInputs) -> TierSizing:
        i = inputs
        if i.variant == "fs":
            assert i.disk is not None, "MooncakeStore fs defaults its SSD size"
            return size_standalone(i.model, i.accelerator, i.tensor_parallelism, i.replicas, i.tier, i.disk)
        return size_embedded(i.model, i.accelerator, i.tensor_parallelism, i.replicas, i.tier)

    def pod_cpu_tier(self, sizing: TierSizing, hosts: int) -> ByteSize:
        """Embedded: each rank's `global_segment_size`; standalone: none (the node's Mooncake Client holds the
        pool, and its DaemonSet carries that stamp)."""
        segment = sizes_of(MooncakeSizes, sizing).segment
        return segment * sizing.tensor_parallelism if segment is not None else ByteSize(0)

    def per_node_memory(self, sizing: TierSizing) -> ByteSize:
        client = client_of(sizing)
        return client.memory_request if client is not None else ByteSize(0)

    def segment_ranks(self, tensor_parallelism: int, variant: Variant) -> int | None:
        return tensor_parallelism if variant == "cpu" else 1  # embedded: one segment per rank

    def uses_tier_claim(self, variant: Variant) -> bool:
        return False  # its filesystem tier is node-local SSD

    def kv_events(self, filesystem_tier: bool) -> tuple[TierEvents, ...]:
        """One record for the pool (its SSD tier, with the fs variant, sits behind the same store)."""
        return (VLLM_HBM_EVENTS, MOONCAKE_EVENTS)

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        return mooncake_store_connector(standalone=spec.filesystem_tier)

    def env(self, spec: ServerSpec) -> list[Manifest]:
        return [
            env_var("MOONCAKE_CONFIG_PATH", f"{MOONCAKE_CONFIG_DIR}/mooncake_config.json"),
            env_var("PYTHONHASHSEED", "0"),
        ]

    def volumes(self, spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
        volumes: list[Manifest] = [{"name": "mooncake-config", "configMap": {"name": MOONCAKE_CONFIG_MAP}}]
        mounts: list[Manifest] = [{"name": "mooncake-config", "mountPath": MOONCAKE_CONFIG_DIR, "readOnly": True}]
        if spec.filesystem_tier:  # the client library checks that the master's root_fs_dir exists
            volumes.append(empty_dir("mooncake-offload-stub"))
            mounts.append({"name": "mooncake-offload-stub", "mountPath": "/data/mooncake-offload"})
        return volumes, mounts

    def devices(self, spec: ServerSpec) -> Manifest:
        return {"rdma/ib": "1"}  # MooncakeStore moves KV over RDMA

    def extra_manifests(self, spec: ServerSpec) -> list[Manifest]:
        sizes = sizes_of(MooncakeSizes, spec.sizing)
        standalone = spec.filesystem_tier
        config = {
            "mode": "standalone-store" if standalone else "embedded",
            "metadata_server": "P2PHANDSHAKE",
            "master_server_address": mooncake.MASTER_ADDRESS,
            "global_segment_size": 0 if standalone or sizes.segment is None else mooncake_text(sizes.segment),
            "local_buffer_size": mooncake_text(sizes.local_buffer),
            "protocol": "rdma",
            "device_name": "",
            "enable_offload": standalone,
        }
        return [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": MOONCAKE_CONFIG_MAP, "namespace": spec.namespace},
                "data": {"mooncake_config.json": json.dumps(config, separators=(",", ":"))},
            }
        ]

    def summary_rows(self, choice: Choice, sizing: TierSizing) -> list[tuple[str, str]]:
        client = "and the Mooncake Client DaemonSet" if client_of(sizing) is not None else "(embedded pool)"
        return [("MooncakeStore", f"Mooncake Master in namespace `{mooncake.NAMESPACE}` {client}")]

    def monitors(self, provider: str, namespace: str) -> list[Manifest]:
        return [master_monitor(provider)]

    def server_peers(self) -> tuple[Peer, ...]:
        """The Mooncake Client's pool, which exchanges KV with the model servers."""
        return (Peer(mooncake.CLIENT_LABELS, {NAMESPACE_NAME_LABEL: mooncake.NAMESPACE}),)

    def daemons(self, inputs: DaemonInputs) -> list[Workload]:
        """The master (a Deployment in its own namespace) and, with the fs variant, the per-node client."""
        master_cold = inputs.cold_start(versions.MOONCAKE_IMAGE, 0)
        master = Workload(
            mooncake.MASTER_WORKLOAD,
            [mooncake.namespace(), *mooncake.master_manifests()],
            rolls="default",
            awaited=Await(AwaitBudget(mooncake.MASTER, master_cold, 1), "Deployment", "beside"),
            ingress=master_policy,
            ingress_at=1,  # after the `mooncake` namespace
        )
        client = client_of(inputs.sizing)
        if client is None:
            return [master]
        assert inputs.tier_namespace is not None, "the fs variant persists KV under the stack's namespace"
        cold = inputs.cold_start(versions.MOONCAKE_IMAGE, client.dram.bytes)
        return [
            master,
            Workload(
                mooncake.CLIENT_WORKLOAD,
                mooncake.client_manifests(client, inputs.tier_namespace),
                needs=(mooncake.MASTER_WORKLOAD.key,),
                rolls="node-by-node",
                awaited=Await(AwaitBudget(mooncake.CLIENT, cold, inputs.nodes), "DaemonSet", "beside"),
                ingress=client_policy,
                holds_cpu_tier=True,
                rollout="Mooncake client DaemonSet: one node at a time;"
                f" each restart drops that node's {client.dram.human()} pool",
            ),
        ]


def master_policy(traffic: StackTraffic) -> Manifest:
    """The master admits its clients (model servers, Mooncake Clients) on RPC and metadata, the scraper on
    metrics."""
    servers, clients = traffic.model_servers.elsewhere(traffic.namespace), Peer(mooncake.CLIENT_LABELS)
    return policy(
        mooncake.MASTER,
        mooncake.NAMESPACE,
        {"matchLabels": dict(mooncake.MASTER_LABELS)},
        [
            Rule([servers, clients], [mooncake.RPC_PORT, mooncake.METADATA_PORT]),
            Rule([traffic.scraper], [mooncake.METRICS_PORT]),
        ],
    )


def client_policy(traffic: StackTraffic) -> Manifest:
    """A Mooncake Client admits the pool's members on every port (the transfer engine's)."""
    servers, clients = traffic.model_servers.elsewhere(traffic.namespace), Peer(mooncake.CLIENT_LABELS)
    return policy(
        mooncake.CLIENT,
        mooncake.NAMESPACE,
        {"matchLabels": dict(mooncake.CLIENT_LABELS)},
        [Rule([servers, clients, Peer(mooncake.MASTER_LABELS)], None)],
    )


def master_monitor(provider: str) -> Manifest:
    """The master's metrics port (9003); GKE scrapes it with a PodMonitoring in namespace `mooncake`."""
    if provider == "gke-managed-prometheus":
        return monitoring.pod_monitor(
            provider, mooncake.MASTER, mooncake.NAMESPACE, mooncake.MASTER_LABELS, "metrics", "15s"
        )
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": mooncake.MASTER, "namespace": mooncake.NAMESPACE, "labels": mooncake.MASTER_LABELS},
        "spec": {
            "selector": {"matchLabels": mooncake.MASTER_LABELS},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "15s"}],
        },
    }


MOONCAKE_STORE = MooncakeStore()
