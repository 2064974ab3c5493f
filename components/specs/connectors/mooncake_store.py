"""MooncakeStore: vLLM's MooncakeStoreConnector on a Mooncake master and, with the fs variant, a
per-node standalone client with node-local SSD; KV moves over RDMA between the pods."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from components.catalog import versions
from components.manifest import Manifest
from components.specs import monitoring, mooncake, sizing
from components.specs.connectors.interface import Connector, DaemonInputs, SizingInputs, Variant
from components.specs.network import NAMESPACE_NAME_LABEL, Peer, Rule, StackTraffic, policy
from components.specs.servers.base import empty_dir, env_var
from components.specs.startup import AwaitBudget
from components.specs.workloads import Await, Workload

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec

MOONCAKE_CONFIG_MAP = "mooncake-store-config"
MOONCAKE_CONFIG_DIR = "/etc/mooncake"


def mooncake_store_connector(standalone: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"kv_connector": "MooncakeStoreConnector", "kv_role": "kv_both"}
    if standalone:
        config["kv_connector_extra_config"] = {"load_async": True}
    return config


class MooncakeStore(Connector):
    key = "mooncake-store"
    cpu_scope = "pooled"  # one pool of every rank's segment (or the Mooncake Clients'); any pod loads from it
    peer_traffic = True  # the pods read each other's segments

    def size(self, inputs: SizingInputs) -> tuple[sizing.TierSizing, sizing.MooncakeClientSizing | None]:
        i = inputs
        if i.variant == "fs":
            assert i.disk is not None, "MooncakeStore fs defaults its SSD size"
            return sizing.size_mooncake_standalone(
                i.model, i.accelerator, i.tensor_parallelism, i.replicas, i.tier, i.disk
            )
        return sizing.size_mooncake_embedded(i.model, i.accelerator, i.tensor_parallelism, i.replicas, i.tier), None

    def segment_ranks(self, tensor_parallelism: int, variant: Variant) -> int | None:
        return tensor_parallelism if variant == "cpu" else 1  # embedded: one segment per rank

    def uses_tier_claim(self, variant: Variant) -> bool:
        return False  # its filesystem tier is node-local SSD

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
        knobs = spec.sizing.knobs
        standalone = spec.filesystem_tier
        config = {
            "mode": "standalone-store" if standalone else "embedded",
            "metadata_server": "P2PHANDSHAKE",
            "master_server_address": mooncake.MASTER_ADDRESS,
            "global_segment_size": 0 if standalone else knobs["global_segment_size"],
            "local_buffer_size": knobs["local_buffer_size"],
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
        client = inputs.client
        if client is None:
            return [master]
        cold = inputs.cold_start(versions.MOONCAKE_IMAGE, client.dram.bytes)
        return [
            master,
            Workload(
                mooncake.CLIENT_WORKLOAD,
                mooncake.client_manifests(client),
                needs=(mooncake.MASTER_WORKLOAD.key,),
                rolls="node-by-node",
                awaited=Await(AwaitBudget(mooncake.CLIENT, cold, inputs.nodes), "DaemonSet", "beside"),
                ingress=client_policy,
                holds_cpu_tier=True,
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
