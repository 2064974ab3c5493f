"""What a cluster stack (`layer: cluster`) exports for its serving stacks, and how a serving stack reads it.

One contract, two readers: the cluster stack's program exports `describe(config)` as `llmdCluster` (and its
kubeconfig, a secret, as `kubeconfig`); its offline render writes the same facts to `cluster-outputs.json`.
A serving stack (`cluster.provider: stack`) takes them as its config: the cluster's pools become its
described `node_pools` (labels that select them, taints, devices, memory, node count), the platform its
`cluster.platform`, the shared file system its `storage`, so the plan runs exactly as it runs against
described pools (fit, `tier: auto`, rollout, budgets, payoff).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from components.catalog import versions
from components.catalog.labels import INSTANCE_TYPE_LABEL
from components.catalog.machines import MACHINES
from components.catalog.storage_backends import CREATED_BACKENDS
from components.specs import images
from components.specs.clusters import POOL_LABEL
from components.specs.connectors import OWN_IMAGES
from components.specs.gateway import gateway_class_for
from stacks.config import StackConfig, formats
from stacks.config.backend_choice import backend_of, configured_mibps, mode_of
from stacks.config.cluster_facts import (
    CLUSTER_OUTPUT,
    ClusterOutputs,
    GatewayFacts,
    MirrorFacts,
    PoolFacts,
    StorageFacts,
)
from stacks.config.cluster_section import NodePoolConfig
from stacks.config.errors import HIDDEN, ConfigError
from stacks.config.pool_hardware import pool_hardware
from stacks.config.providers import provider_of

OUTPUTS_FILE = "cluster-outputs.json"  # what a cluster stack's offline render writes
# The label a serving stack puts on its namespace so the cluster's Gateway admits its HTTPRoute: the Gateway
# selects by label, so a new serving stack never changes the cluster stack.
GATEWAY_ROUTES_LABEL = "llm-d.ai/gateway"


def mirror_facts(config: StackConfig, registries: set[str]) -> MirrorFacts | None:
    """The pull-through caches a created cluster gets for `registries` (its provider's: Artifact Registry remote
    repositories on GKE, ECR pull-through rules on EKS); none on an existing cluster or with `images.mirror: off`."""
    return provider_of(config).mirror(config, registries)


def _pool_facts(config: StackConfig, key: str, pool: NodePoolConfig) -> PoolFacts:
    """The pool's hardware as the fit checks read it (`hardware.pool_hardware`), and what selects its nodes."""
    created = provider_of(config).creates
    machine = MACHINES.get(pool.machine_type or "")
    hardware = pool_hardware(config, key)
    return PoolFacts(
        accelerator=hardware.accelerator,
        accelerators_per_node=hardware.devices_per_node,
        host_memory=hardware.host_memory.quantity() if hardware.host_memory else None,
        labels={POOL_LABEL: key, **pool.labels} if created else dict(pool.labels),
        taints=[t.model_dump(mode="json", exclude_none=True) for t in pool.taints],
        node_count=pool.node_count,
        slices=pool.slices,
        tpu_topology=pool.tpu_topology or (machine.tpu_topology if machine and created else None),
        machine_type=pool.machine_type,
    )


def _storage_facts(config: StackConfig) -> StorageFacts | None:
    storage, backend = config.storage, backend_of(config)
    if not backend.created or backend.storage_class is None:  # a class the cluster has: nothing to export
        return None
    return StorageFacts(
        backend=backend.key,
        storage_class=backend.storage_class,
        size=storage.size.quantity(),
        lustre_throughput=storage.lustre.per_unit_storage_throughput if backend.capacity_steps else None,
        claim_namespace=storage.claim_namespace if backend.one_claim_per_volume else None,
        throughput_mode=mode_of(config).key if len(backend.modes) > 1 else None,
        provisioned_mibps=configured_mibps(config),
    )


def pinned_registries() -> set[str]:
    pinned = (*versions.PINNED_IMAGES, *(i.reference for i in OWN_IMAGES))
    return {images.split_image(image)[0] for image in pinned}


def describe(config: StackConfig, stack: str) -> ClusterOutputs:
    """A cluster stack's config -> what it exports (a pure function: the offline render and the program agree)."""
    gateway = config.gateway
    platform = config.cluster.effective_platform
    choice = gateway_class_for(platform, gateway.class_name) if gateway.enabled else None
    return ClusterOutputs(
        stack=stack,
        provider=config.cluster.provider,  # a cluster layer is never provider stack
        platform=platform,
        name=config.cluster.name,
        gaie_version=config.router.gaie_version,
        node_pools={key: _pool_facts(config, key, pool) for key, pool in sorted(config.node_pools.items())},
        storage=_storage_facts(config),
        mirror=mirror_facts(config, pinned_registries()),
        gateway=(
            GatewayFacts(
                name=gateway.name,
                namespace=gateway.namespace,
                class_name=choice.name,
                body_routing=gateway.body_routing,
                # the load balancer's proxies sit outside the pods (GKE's classes): they come from this range
                proxy_subnet_cidr=None if choice.data_plane_in_cluster else gateway.proxy_subnet_cidr,
            )
            if choice is not None
            else None
        ),
        keda=config.autoscaling.enabled,
        kubeconfig_exported=provider_of(config).exports_kubeconfig(config),
    )


def serving_pools(outputs: ClusterOutputs) -> dict[str, Any]:
    """The cluster's pools as a serving stack's described `node_pools`; a created pool's machine type as the
    instance type its nodes carry (`labels.INSTANCE_TYPE_LABEL`), which its model servers select: it says which
    device they have where the device resource does not (components/catalog/node_pins.py)."""
    pools: dict[str, Any] = {}
    for key, pool in outputs.node_pools.items():
        pools[key] = pool.model_dump(mode="json", exclude_none=True, exclude={"machine_type"})
        if pool.machine_type is not None:
            pools[key]["labels"] = {**pools[key].get("labels", {}), INSTANCE_TYPE_LABEL: pool.machine_type}
    return pools


def storage_section(outputs: ClusterOutputs) -> dict[str, Any] | None:
    """The filesystem tier's storage a serving stack takes from its cluster (None: the cluster has none)."""
    storage = outputs.storage
    if storage is None:
        return None
    out: dict[str, Any] = {"backend": storage.backend, "size": storage.size}
    settings = {
        "per_unit_storage_throughput": storage.lustre_throughput,
        "throughput_mode": storage.throughput_mode,
        "provisioned_mibps": storage.provisioned_mibps,
    }
    section = CREATED_BACKENDS[storage.backend].settings
    if section is not None and any(v is not None for v in settings.values()):
        out[section] = {k: v for k, v in settings.items() if v is not None}
    return out


def _shown(value: object) -> str:
    """A value read from outputs, as one short line (a hostile file may hold a megabyte in one field)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _dotted(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def read_outputs(data: object, source: str, field: str = "cluster.stack") -> ClusterOutputs:
    """Recorded outputs (a file's JSON, or a live stack's `llmdCluster`), parsed with the grammar of the config
    fields they come from: one line when they are not what a cluster stack exports, naming `field` = `source`
    (the stack, or the file they were read from) and the field inside them."""

    def refused(where: str, value: object, why: str) -> ConfigError:
        return ConfigError(field, source, f"its {where} = {value}: {why}")

    try:
        outputs = ClusterOutputs.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        where = (CLUSTER_OUTPUT + _dotted(loc)) if loc else CLUSTER_OUTPUT
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            value, message = HIDDEN, "unknown key"
        elif first["type"] == "missing":
            value = "(missing)"
        elif first["type"] == "value_error" and isinstance(first["input"], dict):  # a check across fields
            raise ConfigError(field, source, f"its {where}.{message}") from None
        else:
            value = _shown(first["input"])
        raise refused(where, value, message[:1].lower() + message[1:]) from None
    for key, recorded in outputs.node_pools.items():  # they become the serving stack's described node_pools
        try:  # as recorded (a line shows what the file holds), before serving_pools adds the instance type
            formats.dns_label(key)
            NodePoolConfig.model_validate(recorded.model_dump(mode="json", exclude_none=True, exclude={"machine_type"}))
        except ValueError as error:  # pydantic's ValidationError is one
            if not isinstance(error, ValidationError):
                raise refused(f"{CLUSTER_OUTPUT}.node_pools", _shown(key), f"a pool key {error}") from None
            first = error.errors(include_url=False)[0]
            where = f"{CLUSTER_OUTPUT}.node_pools.{key}{_dotted(first['loc'])}"
            message = first["msg"].removeprefix("Value error, ")
            raise refused(where, _shown(first["input"]), message[:1].lower() + message[1:]) from None
        machine = outputs.node_pools[key].machine_type
        if machine is not None and machine not in MACHINES:
            raise refused(
                f"{CLUSTER_OUTPUT}.node_pools.{key}.machine_type", _shown(machine), "not a machine type of the catalog"
            )
    return outputs


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def serving_data(data: dict[str, Any], outputs: ClusterOutputs, reference: str) -> dict[str, Any]:
    """A serving stack's config data with its cluster's pools, platform and CRD release in it; what the cluster
    decides is refused when the serving stack sets it otherwise."""
    cluster: dict[str, Any] = _section(data, "cluster")
    router: dict[str, Any] = _section(data, "router")
    for key, value in (
        ("node_pools", data.get("node_pools")),
        ("cluster.platform", cluster.get("platform")),
    ):
        if value is not None:
            raise ConfigError(key, value, f"a serving stack's comes from its cluster stack {reference}; set it there")
    if router.get("gaie_crds_file") is not None:
        raise ConfigError(
            "router.gaie_crds_file",
            router["gaie_crds_file"],
            f"the cluster stack {reference} applies the CRDs; set it there",
        )
    if router.get("gaie_version") not in (None, outputs.gaie_version):
        raise ConfigError(
            "router.gaie_version",
            router["gaie_version"],
            f"the cluster stack {reference} applied the InferencePool CRDs of {outputs.gaie_version}",
        )
    storage: dict[str, Any] = _section(data, "storage")
    if storage.get("backend") in CREATED_BACKENDS:
        raise ConfigError(
            "storage.backend", storage["backend"], f"a serving stack's file system is its cluster stack's ({reference})"
        )
    return {
        **data,
        "cluster": {**cluster, "platform": outputs.platform},
        "node_pools": serving_pools(outputs),
        "router": {**router, "gaie_version": outputs.gaie_version},
    }


def check_serving(config: StackConfig, outputs: ClusterOutputs, reference: str, uses_tier: bool) -> None:
    """What a serving stack needs its cluster to have."""
    if config.autoscaling.enabled and not outputs.keda:
        raise ConfigError(
            "autoscaling.enabled", True, f"the cluster stack {reference} runs no KEDA: enable autoscaling there too"
        )
    if outputs.gateway is not None and config.namespace == outputs.gateway.namespace:
        raise ConfigError(
            "namespace", config.namespace, f"the cluster stack {reference}'s Gateway lives there; pick another"
        )
    storage = outputs.storage
    if uses_tier and storage is not None and storage.claim_namespace not in (None, config.namespace):
        raise ConfigError(
            "namespace",
            config.namespace,
            f"the cluster stack {reference}'s Lustre volume is reserved for a claim in {storage.claim_namespace}"
            " (its storage.claim_namespace)",
        )
