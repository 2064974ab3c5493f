"""The stack's workloads, each from one builder: its manifests, what it needs first, how it rolls, how
long `pulumi up` waits for it and its NetworkPolicy. `workloads()` lists them in declaration order.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from components.catalog.models import ModelSpec
from components.catalog.weight_loading import streams_weights
from components.manifest import Manifest
from components.specs import alerts, dashboard, images, model_cache, monitoring, network, prepull, tier_evictor
from components.specs import sizing as tier_sizing
from components.specs import storage as storage_spec
from components.specs import verification as verification_spec
from components.specs.connectors import DaemonInputs
from components.specs.metric_family import MetricFamily
from components.specs.router_values import router_endpoint
from components.specs.servers import MODEL_SERVER, ServerSpec, model_server_manifests
from components.specs.servers.base import FILES_STORAGE_CLAIM, files_storage_claim, router_selector
from components.specs.startup import AwaitBudget
from components.specs.workloads import CLUSTER, HF_TOKEN, NAMESPACE, ROUTER, Await, Workload, ordered
from components.units import ByteSize, GiB
from stacks.config import StackConfig
from stacks.config.backend_choice import backend_of
from stacks.config.errors import ConfigError
from stacks.planning import cold_starts, hardware, tier_capacity
from stacks.planning.prepull_placement import prepull_manifests, serving_placement
from stacks.planning.resolution import Resolved
from stacks.planning.scale_in import annotator_workload
from stacks.planning.scale_in_record import ScaleIn
from stacks.planning.workload.shared_tier import SharedTier

SERVING = (NAMESPACE, HF_TOKEN, CLUSTER)  # what every model server needs from the stack itself


@dataclass(frozen=True)
class Serving:
    """What the builders need from the plan's resolution: the model-server roles (the last is decode),
    the tier's sizes, the alerts the stack exports."""

    stack: Resolved  # the stack resolved once (its config, connector, choice)
    servers: list[ServerSpec]
    sizing: tier_sizing.TierSizing
    exports: tuple[MetricFamily, ...]  # what the model servers export
    alerts: list[alerts.Alert]
    autoscaled_to: int | None = None  # KEDA's most replicas (None: a fixed count)
    shared_tier: SharedTier | None = None  # the filesystem tier's claim and its evictor
    scale_in: ScaleIn | None = None  # `autoscaling.scale_in: cache-value`: the annotator, the drain

    @property
    def config(self) -> StackConfig:
        return self.stack.config

    @property
    def decode(self) -> ServerSpec:
        return self.servers[-1]

    @property
    def pods(self) -> int:
        return sum(s.replicas * s.group_size for s in self.servers)

    @property
    def nodes(self) -> int:
        """Nodes a per-node daemon rolls over: the pool's, or (no pool described) one per model-server pod."""
        config = self.config
        if config.cache.node_pool:
            return hardware.pool_hardware(config, config.cache.node_pool).nodes
        return self.pods


def workloads(s: Serving) -> dict[str, Workload]:
    """Every workload, in declaration order: what the model servers read, mount or pull first, then the
    model servers (after all of it), monitoring beside them, the verification Job after them."""
    config = s.config
    out: list[Workload] = []
    if s.stack.uses_tier_claim:
        managed = s.shared_tier is not None and s.shared_tier.managed
        out.append(_storage(config, managed))
        if s.shared_tier is not None and managed:
            live = tuple(sorted({r.tier_namespace for r in s.servers if r.tier_identity is not None}))
            out.append(tier_capacity.evictor_workload(config, s.shared_tier.capacity, s.decode.model_cache, live))
    server_objects = [model_server_manifests(server) for server in s.servers]
    daemons = _daemons(s, server_objects[-1][-1])
    if config.images.prepull:
        serving = [m for objects in server_objects for m in objects]
        per_node = [m for d in daemons if d.rolls == "node-by-node" for m in d.manifests]
        out.append(_prepull(config, s, serving, per_node))
    if s.decode.model_cache is not None:
        out.append(_model_cache(config, s.decode.model_cache, s.sizing.model, [w.key for w in out]))
    out += daemons
    before_servers = (*SERVING, *(w.key for w in out))
    servers = [
        _model_server(s, server, objects, before_servers)
        for server, objects in zip(s.servers, server_objects, strict=True)
    ]
    out += servers
    if s.scale_in is not None:  # beside the model servers, whose pods it annotates
        out.append(annotator_workload(config, s.scale_in, s.decode))
    if config.monitoring.enabled:
        out.append(_monitoring(s, before_servers))
    if config.verification.enabled:
        out.append(_verification(s, (ROUTER, *(w.key for w in servers))))
    return ordered(out)


def lustre_volume_name(namespace: str) -> str:
    """The Lustre volume reserved for the tier claim of `namespace`."""
    return f"{namespace}-kv-cache-lustre"


def _storage(config: StackConfig, managed: bool) -> Workload:
    backend = backend_of(config)
    storage_class = backend.storage_class or config.storage.storage_class
    volume = lustre_volume_name(config.namespace) if backend.one_claim_per_volume else None  # its reserved volume
    claim = files_storage_claim(config.namespace, storage_class, config.storage.size.quantity(), volume)
    claim["metadata"]["labels"].update(tier_evictor.claim_label(managed))
    return Workload(
        storage_spec.WORKLOAD, [claim], needs=(NAMESPACE, CLUSTER), outputs={"claimName": claim["metadata"]["name"]}
    )


def resolve_model_cache(stack: Resolved, model: ModelSpec, image: str) -> model_cache.ModelCache | None:
    """auto: on the tier's claim where the stack has one (the weights belong beside the tier), else off."""
    config = stack.config
    settings, has_claim = config.model_cache, stack.uses_tier_claim
    mode = ("shared" if has_claim else "off") if settings.mode == "auto" else settings.mode
    if mode == "off":
        return None
    if mode == "shared" and not has_claim:
        raise ConfigError(
            "model_cache.mode",
            "shared",
            "needs the filesystem tier's claim (cache.tier.variant fs, not mooncake-store); allowed: dedicated, off",
        )
    return model_cache.ModelCache(
        claim=FILES_STORAGE_CLAIM if mode == "shared" else model_cache.MODEL_CACHE_CLAIM,
        shared_with_tier=mode == "shared",
        model=model.name,
        compile_key=model_cache.compile_key(config.cache.accelerator, image, model.name),
        load_format="runai_streamer" if stack.connector.weight_streaming and streams_weights(image) else None,
        compile_cache=settings.compile_cache,
    )


def _model_cache(config: StackConfig, cache: model_cache.ModelCache, model: ModelSpec, before: list[str]) -> Workload:
    """A dedicated claim (twice the weights: a new revision's files land beside the old ones), the Job."""
    settings = config.model_cache
    out = []
    # The claim the weights land on: its size is what it holds (EFS is elastic: its claim's size is nominal).
    holds = (
        ("storage.size", config.storage.size if not backend_of(config).elastic else None)
        if cache.shared_with_tier
        else ("model_cache.size", settings.size)
    )
    if holds[1] is not None and holds[1] < model.weight_bytes:
        raise ConfigError(
            holds[0],
            holds[1].human(),
            f"smaller than the {model.weight_bytes.ceil_to(GiB).human()} of weights of {model.name} the model cache"
            " fetches onto it",
        )
    if not cache.shared_with_tier:
        size = settings.size or ByteSize(-(-2 * model.weight_bytes.bytes // GiB) * GiB)
        out.append(model_cache.dedicated_claim(config.namespace, settings.storage_class, size.quantity()))
    budget = AwaitBudget(model_cache.FETCH_NAME, cold_starts.fetch_job_cold_start(config, cache, model), 1)
    fetch = model_cache.FetchSpec(config.namespace, cache, settings.revision, settings.image, budget.seconds)
    manifests = out + model_cache.fetch_manifests(fetch)
    job = next(m for m in manifests if m["kind"] == "Job")
    return Workload(
        model_cache.WORKLOAD,
        manifests,
        # The weights are on the volume before any model server starts.
        needs=(*SERVING, *(k for k in before if k == storage_spec.WORKLOAD.key)),
        # Its Job carries its budget already (the Job's name carries the fetch's identity).
        awaited=Await(dataclasses.replace(budget, workload=job["metadata"]["name"]), None, "warm"),
        ingress=functools.partial(_closed, model_cache.FETCH_NAME, {"app.kubernetes.io/name": model_cache.FETCH_NAME}),
    )


def _closed(name: str, pod_labels: dict[str, str], traffic: network.StackTraffic) -> Manifest:
    return network.closed_policy(traffic.namespace, name, pod_labels)


def _daemons(s: Serving, decode_workload: Manifest) -> list[Workload]:
    """The connector's own workloads (its per-node daemons and what they need); a per-node daemon runs only
    where the model servers may run (their node selector, affinity and tolerations, as the pre-pull)."""
    config = s.config
    built = s.stack.connector.daemons(
        DaemonInputs(
            choice=s.stack.choice,
            namespace=config.namespace,
            sizing=s.sizing,
            nodes=s.nodes,
            cold_start=cold_starts.daemon_cold_start,
            tier_namespace=s.decode.tier_namespace if s.decode.tier_identity is not None else None,
        )
    )
    per_node = [w for w in built if w.rolls == "node-by-node"]
    if not per_node:
        return built
    placement = serving_placement(s.decode.accelerator, decode_workload)
    if not placement.constrained:
        # Seen under the real engine (`./run e2e gpu-vllm-mooncake-store-fs`): unplaced, the DaemonSet has a pod
        # on every node, and those on the system nodes stay Pending (no rdma/ib there), so `pulumi up` waits
        # out its budget.
        raise ConfigError(
            "cache.node_pool",
            config.cache.node_pool,
            f"{per_node[0].manifests[-1]['metadata']['name']} runs beside each model server on its node: it needs the"
            " model servers placed (a node pool that selects its nodes by label), else it lands on every node",
        )
    return [
        w.with_manifests([prepull.placed(m, placement) for m in w.manifests]) if w in per_node else w for w in built
    ]


def _prepull(config: StackConfig, s: Serving, serving: list[Manifest], daemons: list[Manifest]) -> Workload:
    """On the pool's nodes (its node pool first), while the weights are fetched."""
    manifests = prepull_manifests(config, s.decode.accelerator, serving, daemons)
    pulled = cold_starts.prepull_cold_start(images.images(manifests))
    return Workload(
        prepull.WORKLOAD,
        manifests,
        needs=(NAMESPACE, CLUSTER),
        rolls="all-nodes",
        awaited=Await(AwaitBudget(prepull.NAME, pulled, 1), "DaemonSet", "warm"),
        ingress=functools.partial(_closed, prepull.NAME, dict(prepull.LABELS)),
        rollout=f"image pre-pull DaemonSet `{prepull.NAME}`: every node at once (maxUnavailable 100%); a changed"
        " image is on every node of the pool before the model servers roll",
    )


def _model_server(s: Serving, server: ServerSpec, manifests: list[Manifest], needs: tuple[str, ...]) -> Workload:
    """A rolling update restarts a role's pods one after the other: a cold start per replica."""
    cold = cold_starts.model_server_cold_start(
        s.config, server.accelerator.key, server.model, server.image, server.model_cache, readers=s.pods
    )
    workload = manifests[-1]
    lws = workload["kind"] == "LeaderWorkerSet"  # no built-in await: the generic one, on its condition
    name = workload["metadata"]["name"]
    # Under autoscaling a rollout may meet up to the most replicas, and KEDA owns the count once it exists.
    waves = s.autoscaled_to or server.replicas
    owned = {workload["kind"]: ("spec.replicas",)} if s.autoscaled_to else {}
    return Workload(
        MODEL_SERVER,
        manifests,
        needs=needs,
        rolls="strategy",
        awaited=Await(
            AwaitBudget(name, cold, waves), workload["kind"], "serve", "condition=Available" if lws else None
        ),
        ignore_changes=owned,
        ingress=functools.partial(_server_policy, server.role, server.workload_name),
        server=server,
        key_suffix="" if server.role == "decode" else server.role,
        outputs={"workloadName": name},
    )


def _server_policy(role: str, name: str, traffic: network.StackTraffic) -> Manifest:
    return network.model_server_policy(traffic, traffic.role(role), name)


def _monitoring(s: Serving, needs: tuple[str, ...]) -> Workload:
    config, decode = s.config, s.decode
    provider, namespace = config.monitoring.provider, config.namespace
    out = [monitoring.model_server_monitor(provider, namespace, router_selector(decode), decode.role)]
    out += s.stack.connector.monitors(provider, namespace)
    if s.shared_tier is not None and s.shared_tier.managed:
        out.append(monitoring.tier_evictor_monitor(provider, namespace))
    if s.scale_in is not None:
        out.append(monitoring.cache_annotator_monitor(provider, namespace))
    if provider == "prometheus-operator":
        out.append(alerts.prometheus_rule("tiered-prefix-cache", namespace, s.alerts))
    else:  # GKE Managed Prometheus evaluates rules from its own Rules kind
        out.append(alerts.gmp_rules("tiered-prefix-cache", namespace, s.alerts))
    if config.monitoring.dashboard:
        out.append(dashboard.dashboard_config_map(namespace, s.exports, config.monitoring.alerts.window))
    return Workload(monitoring.WORKLOAD, out, needs=needs)


def _verification(s: Serving, needs: tuple[str, ...]) -> Workload:
    config, decode, connector = s.config, s.decode, s.stack.connector
    manifests = verification_spec.verification_manifests(
        verification_spec.VerificationSpec(
            namespace=config.namespace,
            image=config.verification.image,
            model=decode.model.name,
            router_url=router_endpoint(config.router.release, config.namespace),
            selector=router_selector(decode),
            check=connector.verification_check,
            shared_tier=connector.verifies_shared_tier(s.stack.choice),
            requests=config.verification.requests,
        )
    )
    job = next(m for m in manifests if m["kind"] == "Job")
    cold = cold_starts.job_cold_start(config.verification.image, int(job["spec"]["activeDeadlineSeconds"]))
    pods = {"app.kubernetes.io/name": verification_spec.NAME}
    return Workload(
        verification_spec.WORKLOAD,
        manifests,
        needs=needs,
        awaited=Await(AwaitBudget(job["metadata"]["name"], cold, 1), "Job", "beside"),
        ingress=functools.partial(_closed, verification_spec.NAME, pods),
        api_access=True,  # it lists the model-server pods
    )
