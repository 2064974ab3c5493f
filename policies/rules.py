"""The rules: pure functions over resource inputs, so the same checks run under
`pulumi preview --policy-pack policies` and offline (`python -m stacks check NAME`).

Each rule takes every resource of the stack and its own config, and returns its violations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from components.catalog import versions
from components.catalog.accelerators import ACCELERATORS
from components.catalog.labels import IMAGE_PREPULL, ROUTER_BLOCK_TOKENS, WORKLOAD_LABEL, router_pod_labels
from components.catalog.models import MODELS, ModelSpec
from components.catalog.rates import ACCELERATOR_RATES, STORAGE_RATES
from components.formulas import payoff
from components.specs import mooncake, security
from components.units import GiB
from policies.resources import (
    CHART_TYPE,
    Pod,
    Resource,
    args,
    chart_values,
    connectors,
    cpu_tier_bytes,
    endpoint_picker_config,
    env,
    flag,
    image_tag,
    kv_transfer_config,
    memory_volumes,
    model_source,
    pods,
    quantity,
    rwx_claims,
    selects,
    served_model,
)

Enforcement = Literal["mandatory", "advisory"]


@dataclass(frozen=True)
class Violation:
    resource: Resource | None
    message: str


Check = Callable[[list[Resource], dict[str, Any]], list[Violation]]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    enforcement: Enforcement
    check: Check
    config: dict[str, Any] = field(default_factory=dict)  # defaults; the pack exposes them as its schema


def _model_servers(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any], dict[str, Any]]]:
    """(pod, container, kv-transfer-config) for every container started with a connector config."""
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            config = kv_transfer_config(container)
            if config is not None:
                out.append((pod, container, config))
    return out


def _charts(resources: list[Resource]) -> list[Resource]:
    return [r for r in resources if r.type == CHART_TYPE and "router" in chart_values(r)]


def _cpu_producer_capacity(values: dict[str, Any]) -> int | None:
    for plugin in endpoint_picker_config(values).get("plugins") or []:
        params = plugin.get("parameters") or {}
        if plugin.get("type") == "approx-prefix-cache-producer" and "lruCapacityPerServer" in params:
            return int(params["lruCapacityPerServer"])
    return None


# --- the seed's failure modes -------------------------------------------------------------------


def router_capacity_within_tier(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """CPU producer capacity x 64 tokens x KV bytes per token must fit the servers' CPU tier.

    MooncakeStore pools every pod's memory, so its per-server capacity is the pool: not checked per pod.
    """
    out = []
    for chart in _charts(resources):
        values = chart_values(chart)
        capacity = _cpu_producer_capacity(values)
        selector = ((values["router"].get("modelServers") or {}).get("matchLabels")) or {}
        if capacity is None:
            continue
        for pod in pods(resources):
            if not selects(selector, pod.labels):
                continue
            for container in pod.containers(init=False):
                model = MODELS.get(served_model(container) or "")
                if model is None:
                    continue
                kv = model.kv_bytes_per_token.bytes
                tier = cpu_tier_bytes(container, kv)
                believed = capacity * ROUTER_BLOCK_TOKENS * kv
                if tier is not None and believed > tier:
                    out.append(
                        Violation(
                            chart,
                            f"router lruCapacityPerServer {capacity} tracks {believed} bytes per pod, more than the"
                            f" {tier}-byte CPU tier of {pod.owner.name}: the router would steer requests to"
                            f" evicted blocks (at most {tier // (ROUTER_BLOCK_TOKENS * kv)})",
                        )
                    )
    return out


def memory_limit_covers_tier(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """tmpfs pages count toward the pod's memory limit: the limit must hold the tier and every memory volume."""
    out = []
    for pod in pods(resources):
        volumes = memory_volumes(pod)
        unbounded = [v["name"] for v in volumes if not (v.get("emptyDir") or {}).get("sizeLimit")]
        sizes = [quantity(v["emptyDir"].get("sizeLimit")) for v in volumes]
        shm = sum(size.bytes for size in sizes if size is not None)
        for container in pod.containers(init=False):
            limit = quantity(((container.get("resources") or {}).get("limits") or {}).get("memory"))
            tier = (kv_transfer_config(container) or {}).get("kv_connector_extra_config", {}).get("cpu_bytes_to_use")
            if tier is None:
                continue
            if unbounded:
                out.append(Violation(pod.owner, f"memory-backed volume {unbounded} has no sizeLimit beside a CPU tier"))
            if limit is None or limit.bytes < max(int(tier), shm):
                out.append(
                    Violation(
                        pod.owner,
                        f"container {container.get('name')} memory limit {limit.quantity() if limit else 'unset'} is"
                        f" below its CPU tier ({int(tier)} bytes) or its memory-backed volumes ({shm} bytes)",
                    )
                )
    return out


def filesystem_tier_needs_rwx(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    shared = rwx_claims(resources)
    out = []
    for pod, _container, config in _model_servers(resources):
        tiers = (config.get("kv_connector_extra_config") or {}).get("secondary_tiers") or []
        if not any(t.get("type") == "fs" for t in tiers):
            continue
        pvcs = [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.spec.get("volumes") or []]
        if not shared & set(pvcs):
            out.append(Violation(pod.owner, "filesystem tier without a ReadWriteMany PersistentVolumeClaim"))
    return out


def mooncake_requests_rdma(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            kinds = {c.get("kv_connector") for c in connectors(kv_transfer_config(container))}
            if "MooncakeStoreConnector" in kinds or args(container)[:1] == ["mooncake_client"]:
                requests = (container.get("resources") or {}).get("requests") or {}
                if "rdma/ib" not in requests:
                    out.append(
                        Violation(
                            pod.owner, f"{container.get('name')} uses MooncakeStore over RDMA but requests no rdma/ib"
                        )
                    )
    return out


def _lmcache_clients(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any]]]:
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            kinds = {c.get("kv_connector") for c in connectors(kv_transfer_config(container))}
            if kinds & {"LMCacheConnectorV1", "LMCacheMPConnector"} or "LMCACHE_KV_CONFIG" in env(container):
                out.append((pod, container))
    return out


def _lmcache_servers(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any]]]:
    return [
        (pod, c)
        for pod in pods(resources)
        for c in pod.containers(init=False)
        if args(c)[:2] in (["lmcache", "server"], ["/opt/venv/bin/lmcache", "server"])
    ]


def lmcache_hash_seed(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    return [
        Violation(pod.owner, f"{c.get('name')} uses LMCache without PYTHONHASHSEED: token hashes differ per process")
        for pod, c in _lmcache_clients(resources)
        if "PYTHONHASHSEED" not in env(c)
    ]


def lmcache_image_tags_match(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    servers = {image_tag(str(c.get("image", ""))) for _, c in _lmcache_servers(resources)}
    return [
        Violation(
            pod.owner,
            f"LMCache client image {c.get('image')} does not share the server's tag {sorted(map(str, servers))}",
        )
        for pod, c in _lmcache_clients(resources)
        if servers and image_tag(str(c.get("image", ""))) not in servers
    ]


def lmcache_isolated_ipc_agrees(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    servers = [("--isolated-ipc" in args(c)) for _, c in _lmcache_servers(resources)]
    out = []
    for r in resources:
        if r.type != "kubernetes:core/v1:ConfigMap":
            continue
        for key, text in (r.props.get("data") or {}).items():
            try:
                config = json.loads(text)
            except (TypeError, json.JSONDecodeError):
                continue
            for c in connectors(config if isinstance(config, dict) else None):
                flag = (c.get("kv_connector_extra_config") or {}).get("lmcache.mp.isolated_ipc")
                if flag is not None and servers and any(bool(flag) != s for s in servers):
                    out.append(
                        Violation(
                            r, f"{key}: lmcache.mp.isolated_ipc={flag} disagrees with the server's --isolated-ipc"
                        )
                    )
    return out


def prefix_scoring_has_tokens(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """A token-block prefix scorer with no tokenizer scores every pod 0 once there are two or more pods."""
    replicas = sum(
        int((pod.owner.props.get("spec") or {}).get("replicas") or 1) for pod, _c, _k in _model_servers(resources)
    )
    out = []
    for chart in _charts(resources):
        values = chart_values(chart)
        plugins = endpoint_picker_config(values).get("plugins") or []
        producers = {p.get("name") or p.get("type") for p in plugins if p.get("type") == "approx-prefix-cache-producer"}
        token_scorers = [
            p for p in plugins
            if p.get("type") == "prefix-cache-scorer"
            and (p.get("parameters") or {}).get("prefixMatchInfoProducerName") not in producers
        ]  # fmt: skip
        has_tokens = any(p.get("type") == "token-producer" for p in plugins) and (
            ((values["router"].get("tokenizer") or {}).get("enabled")) is True
        )
        if token_scorers and replicas >= 2 and not has_tokens:
            out.append(
                Violation(chart, "prefix-cache-scorer on token blocks with 2+ pods and no tokenizer/token-producer")
            )
    return out


def prefix_caching_only_in_test_mode(resources: list[Resource], config: dict[str, Any]) -> list[Violation]:
    if config.get("testMode"):
        return []
    return [
        Violation(pod.owner, f"{c.get('name')} runs with --no-enable-prefix-caching outside test mode")
        for pod in pods(resources)
        for c in pod.containers(init=False)
        if "--no-enable-prefix-caching" in args(c)
    ]


def router_selects_model_servers(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    labels = [pod.labels for pod in pods(resources)]
    out = []
    for chart in _charts(resources):
        selector = ((chart_values(chart)["router"].get("modelServers") or {}).get("matchLabels")) or {}
        if not any(selects(selector, pod_labels) for pod_labels in labels):
            out.append(Violation(chart, f"router modelServers.matchLabels {selector} selects no model-server pod"))
    return out


def one_router_per_namespace(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """Every release of the router chart creates a ConfigMap named `envoy`: two in one namespace collide."""
    by_namespace: dict[str, list[Resource]] = {}
    for chart in _charts(resources):
        by_namespace.setdefault(str(chart.props.get("namespace") or "default"), []).append(chart)
    return [
        Violation(chart, f"router releases {[c.name for c in charts]} share namespace {namespace}")
        for namespace, charts in by_namespace.items()
        if len(charts) > 1
        for chart in charts[1:]
    ]


# --- does each tier pay off (advisory) ----------------------------------------------------------

LUSTRE_TYPE, EFS_TYPE = "gcp:lustre/instance:Instance", "aws:efs/fileSystem:FileSystem"


@dataclass(frozen=True)
class _Server:
    pod: Pod
    model: ModelSpec
    accelerator: str
    devices: int  # per pod
    group: int  # pods per replica (LeaderWorkerSet size)
    pods: int  # pods of this workload
    block_tokens: int
    claims: list[str]


def _accelerator(resources: list[Resource], pod: Pod, container: dict[str, Any]) -> tuple[str, int] | None:
    """The catalog accelerator a model-server pod runs on, and how many devices it holds."""
    limits = ((container.get("resources") or {}).get("limits")) or {}
    selector = pod.spec.get("nodeSelector") or {}
    for key, profile in ACCELERATORS.items():
        if profile.tpu_accelerator and selector.get("cloud.google.com/gke-tpu-accelerator") != profile.tpu_accelerator:
            continue
        if profile.device_resource and profile.device_resource in limits:
            return key, int(limits[profile.device_resource])
        if profile.dra_device_class:
            for request in _dra_requests(resources, pod):
                if request.get("deviceClassName") == profile.dra_device_class:
                    return key, int(request.get("count") or 1)
    return None


def _dra_requests(resources: list[Resource], pod: Pod) -> list[dict[str, Any]]:
    names = {c.get("resourceClaimTemplateName") for c in pod.spec.get("resourceClaims") or []}
    return [
        request.get("exactly") or request
        for r in resources
        if r.type.endswith(":ResourceClaimTemplate") and (r.props.get("metadata") or {}).get("name") in names
        for request in ((((r.props.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or [])
    ]


def _block_tokens(resources: list[Resource], container: dict[str, Any], accelerator: str) -> int:
    """Tokens per block the connector moves between host memory and the accelerator."""
    argv, config = args(container), kv_transfer_config(container) or {}
    chunk: int | None = None
    if any(c is container for _, c in _lmcache_clients(resources)):
        chunk_env = env(container).get("LMCACHE_CHUNK_SIZE", {}).get("value")
        servers = [flag(args(c), "--chunk-size") for _, c in _lmcache_servers(resources)]
        chunk = int(chunk_env or next((v for v in servers if v), payoff.LMCACHE_CHUNK_TOKENS))
    page, block = flag(argv, "--page-size"), (config.get("kv_connector_extra_config") or {}).get("block_size")
    tokens, _ = payoff.transfer_block(
        int(flag(argv, "--block-size") or ACCELERATORS[accelerator].kv_block_tokens),
        tpu_offload="TPUOffloadConnector" in {c.get("kv_connector") for c in connectors(config)},
        page_tokens=int(page) if page else None,  # SGLang HiCache moves pages
        lmcache_chunk=chunk,
        tiering_block=int(block) if block else None,
    )
    return tokens


def _tiered_servers(resources: list[Resource]) -> list[_Server]:
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            model = MODELS.get(served_model(container) or "")
            argv = args(container)
            tiered = "--kv-transfer-config" in argv or "--enable-hierarchical-cache" in argv
            found = _accelerator(resources, pod, container) if model and tiered else None
            if model is None or found is None:
                continue
            spec = pod.owner.props.get("spec") or {}
            group = int(((spec.get("leaderWorkerTemplate") or {}).get("size")) or 1)
            claims = [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.spec.get("volumes") or []]
            out.append(
                _Server(
                    pod, model, found[0], found[1], group, int(spec.get("replicas") or 1) * group,
                    _block_tokens(resources, container, found[0]), [c for c in claims if c],
                )
            )  # fmt: skip
    return out


def _shared_read(resources: list[Resource], config: dict[str, Any]) -> tuple[float, float | None, str] | None:
    """(aggregate, per-client limit, what) of the stack's shared filesystem; None: not known."""
    for r in resources:
        if r.type == LUSTRE_TYPE:
            tput, size = (
                float(r.props.get("perUnitStorageThroughput") or 0),
                float(r.props.get("capacityGib") or 0) * GiB,
            )
            aggregate = payoff.lustre_aggregate(tput, size)
            return aggregate, None, f"Managed Lustre {tput:g} MB/s per TiB x {payoff.lustre_tib(size):.2f} TiB"
        if r.type == EFS_TYPE and r.props.get("throughputMode") == "elastic":
            efs = STORAGE_RATES["aws-efs"]
            assert efs.aggregate is not None and efs.per_client is not None
            return efs.aggregate.value, efs.per_client.value, "EFS Elastic throughput"
    if config.get("filesystemReadBandwidth"):
        return float(config["filesystemReadBandwidth"]), None, "the configured filesystemReadBandwidth"
    return None


def tiers_beat_recompute(resources: list[Resource], config: dict[str, Any]) -> list[Violation]:
    """A tier pays off in latency only when a reload beats recomputing: KV bytes / recompute time per token at
    the configured prefix length (`prefixTokens`; the stack's `monitoring.alerts.prefix_tokens`), with the
    payoff table's arithmetic (components/formulas/payoff.py)."""
    servers = _tiered_servers(resources)
    rwx = rwx_claims(resources)
    shared = _shared_read(resources, config)
    readers = sum(s.pods for s in servers if rwx & set(s.claims))
    configured = int(config.get("prefixTokens") or payoff.ALERT_PREFIX_TOKENS)
    out = []
    for s in servers:
        rates = ACCELERATOR_RATES[s.accelerator]
        replica = payoff.Replica(s.model, rates, s.devices, s.group)
        prefix = min(configured, payoff.longest_prefix(s.model))
        seconds = payoff.recompute_seconds_per_token(replica, prefix)
        break_even = payoff.break_even(replica, prefix)
        block = payoff.transfer_block_bytes(replica, s.block_tokens)
        cpu = payoff.cpu_tier_bandwidth(replica, s.block_tokens)
        tiers = [("CPU tier", cpu, f"{rates.host_link.name} at {block} B blocks")]
        if shared is not None and rwx & set(s.claims):
            aggregate, per_client, what = shared
            share = payoff.filesystem_share(aggregate, readers, per_client, cpu)
            tiers.append(("filesystem tier", share, f"{what}, shared by {readers} pods"))
        for tier, bandwidth, how in tiers:
            if bandwidth < break_even:
                out.append(
                    Violation(
                        s.pod.owner,
                        f"the {tier} of {s.pod.owner.name} reloads at about {bandwidth / 1e9:.2f} GB/s per pod ({how}),"
                        f" below the {break_even / 1e9:.2f} GB/s at which a load beats recomputing {s.model.name} on"
                        f" {replica.devices} x {s.accelerator} ({seconds * 1e6:.1f} µs per token at {prefix:,}-token"
                        " prefixes): it still saves accelerator time and holds more than HBM, but it does not shorten"
                        " time to first token",
                    )
                )
    return out


def weights_fetched_once(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """A model server that loads its model by Hub id downloads the weights in every pod, on every restart;
    a stack with a ReadWriteMany claim can fetch them once onto it (`model_cache`)."""
    shared = sorted(rwx_claims(resources))
    if not shared:
        return []
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            source = model_source(container)
            if source and not source.startswith("/"):
                out.append(
                    Violation(
                        pod.owner,
                        f"container {container.get('name')} downloads {source} from Hugging Face in every pod"
                        f" while the stack has the ReadWriteMany claim {', '.join(shared)}: set model_cache to"
                        " fetch the weights once onto it",
                    )
                )
    return out


def image_prepull(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """An image pre-pull DaemonSet runs on the serving pool only (unplaced, it pulls every 10-20 GB image onto
    every node of the cluster) and pulls every image the accelerator pods run (else a node meets one cold)."""
    serving = {
        str(container.get("image"))
        for pod in pods(resources)
        for container in pod.containers(init=False)
        if _accelerator(resources, pod, container) is not None
    }
    out = []
    for pod in pods(resources):
        if pod.labels.get(WORKLOAD_LABEL) != IMAGE_PREPULL:
            continue
        if not pod.spec.get("nodeSelector") and not (pod.spec.get("affinity") or {}).get("nodeAffinity"):
            out.append(
                Violation(pod.owner, "pulls its images onto every node of the cluster: place it on the serving pool")
            )
        missing = sorted(serving - {str(c.get("image")) for c in pod.containers()})
        if missing:
            out.append(Violation(pod.owner, f"does not pull {', '.join(missing)}, which the model servers run"))
    return out


# --- platform hygiene ---------------------------------------------------------------------------

MUTABLE_TAGS = ("latest", "stable", "main", "master", "nightly", "dev", "edge")  # compared case-insensitively
# OCI digests this rule accepts: the algorithm and its full lower-case hex length.
DIGEST = re.compile(r"^@(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$")


def _unpinned(image: str) -> str | None:
    """Why an image reference is not pinned (None: pinned to a release tag or a well-formed digest)."""
    tag = image_tag(image)
    if tag is None:
        return "has no tag"
    if tag.startswith("@"):
        return None if DIGEST.match(tag) else "has a malformed digest"
    return f"uses the floating tag {tag}" if tag.lower() in MUTABLE_TAGS else None


def images_pinned(resources: list[Resource], config: dict[str, Any]) -> list[Violation]:
    if config.get("allowMutableTags"):
        return []
    out = []
    for pod in pods(resources):
        for c in pod.containers():
            why = _unpinned(str(c.get("image", "")))
            if why:
                out.append(
                    Violation(pod.owner, f"image {c.get('image')} is not pinned to a release tag or digest: {why}")
                )
    for chart in _charts(resources):
        version = str(chart.props.get("version") or "")
        source = str(chart.props.get("chart") or "")
        if not version and versions.is_local_chart(source):
            # A packaged chart on disk: Helm takes no version for it, its file name carries it.
            version = re.sub(r"^.*-(v?[0-9]+\.[0-9]+\.[0-9]+)\.tgz$", r"\1", source, flags=re.ASCII)
            version = version if version != source else ""
        if not version or version.lstrip("v").count(".") < 2:
            out.append(Violation(chart, f"chart version {version or '(none)'} is not a pinned release"))
    return out


def resource_requests(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    return [
        Violation(pod.owner, f"container {c.get('name')} has no cpu and memory requests")
        for pod in pods(resources)
        for c in pod.containers()
        if not {"cpu", "memory"} <= set(((c.get("resources") or {}).get("requests")) or {})
    ]


PRIVILEGED_ALLOWED = security.PRIVILEGED_CONTAINERS


def privileged_only_where_required(resources: list[Resource], config: dict[str, Any]) -> list[Violation]:
    allowed = set(config.get("allowedContainers") or PRIVILEGED_ALLOWED)
    return [
        Violation(pod.owner, f"container {c.get('name')} is privileged")
        for pod in pods(resources)
        for c in pod.containers()
        if (c.get("securityContext") or {}).get("privileged") and c.get("name") not in allowed
    ]


def _subject(pod: Pod, container: dict[str, Any]) -> security.Subject:
    return security.Subject(pod.labels, pod.spec, container)


def _runs_as_root(pod: Pod, container: dict[str, Any]) -> bool:
    """Root unless runAsNonRoot (container, else pod) holds and no runAsUser 0 overrides it."""
    pod_context, context = pod.spec.get("securityContext") or {}, container.get("securityContext") or {}
    user = context.get("runAsUser", pod_context.get("runAsUser"))
    non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
    return user == 0 or non_root is not True


def root_only_with_exemption(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    return [
        Violation(pod.owner, f"container {c.get('name')} runs as root without an exemption (components.specs.security)")
        for pod in pods(resources)
        for c in pod.containers()
        if _runs_as_root(pod, c) and not any(e.root for e in security.exemptions(_subject(pod, c)))
    ]


def containers_hardened(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """No privilege escalation, every capability dropped but those an exemption adds back, RuntimeDefault seccomp."""
    out = []
    for pod in pods(resources):
        pod_seccomp = ((pod.spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
        for c in pod.containers():
            context = c.get("securityContext") or {}
            if context.get("privileged"):
                continue  # privileged-containers decides
            granted = {cap for e in security.exemptions(_subject(pod, c)) for cap in e.capabilities}
            capabilities = context.get("capabilities") or {}
            missing = [
                what
                for what, ok in (
                    ("allowPrivilegeEscalation: false", context.get("allowPrivilegeEscalation") is False),
                    ("capabilities.drop [ALL]", "ALL" in (capabilities.get("drop") or [])),
                    ("seccompProfile RuntimeDefault", (context.get("seccompProfile") or {}).get("type", pod_seccomp)
                     in ("RuntimeDefault", "Localhost")),
                    ("no capability beyond its exemptions", set(capabilities.get("add") or []) <= granted),
                )
                if not ok
            ]  # fmt: skip
            if missing:
                out.append(Violation(pod.owner, f"container {c.get('name')} lacks {', '.join(missing)}"))
    return out


def no_host_namespaces(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    return [
        Violation(pod.owner, f"pod shares the node's {key[4:].lower()} namespace ({key}: true)")
        for pod in pods(resources)
        for key in ("hostNetwork", "hostPID", "hostIPC")
        if pod.spec.get(key) is True
    ]


HOST_PATHS_ALLOWED = (mooncake.HOST_OFFLOAD_DIR,)


def host_paths_allowed(resources: list[Resource], config: dict[str, Any]) -> list[Violation]:
    def normal(path: Any) -> str:
        return str(path or "").rstrip("/") or "/"

    allowed = {normal(p) for p in config.get("allowedHostPaths") or HOST_PATHS_ALLOWED}
    return [
        Violation(pod.owner, f"volume {v.get('name')} mounts host path {v['hostPath'].get('path')}")
        for pod in pods(resources)
        for v in pod.spec.get("volumes") or []
        if "hostPath" in v and normal(v["hostPath"].get("path")) not in allowed
    ]


def _bound_service_accounts(resources: list[Resource]) -> set[tuple[str, str]]:
    """(namespace, name) of every ServiceAccount a RoleBinding or ClusterRoleBinding of the stack grants."""
    out = set()
    for r in resources:
        if r.type in (
            "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        ):
            for subject in r.props.get("subjects") or []:
                if subject.get("kind") == "ServiceAccount":
                    out.add((str(subject.get("namespace", _namespace(r))), str(subject.get("name"))))
    return out


def _namespace(resource: Resource) -> str:
    return str((resource.props.get("metadata") or {}).get("namespace") or "default")


def token_only_for_api_access(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """A pod mounts a service-account token only when its account is granted something (it calls the API)."""
    opted_out = {
        (_namespace(r), str((r.props.get("metadata") or {}).get("name")))
        for r in resources
        if r.type == "kubernetes:core/v1:ServiceAccount" and r.props.get("automountServiceAccountToken") is False
    }
    bound = _bound_service_accounts(resources)
    out = []
    for pod in pods(resources):
        account = (_namespace(pod.owner), str(pod.spec.get("serviceAccountName") or "default"))
        mounted = pod.spec.get("automountServiceAccountToken")
        if mounted is False or (mounted is None and account in opted_out) or account in bound:
            continue
        out.append(
            Violation(pod.owner, f"pod mounts a token of service account {account[1]}, which is granted nothing")
        )
    return out


CHART_REGISTRIES_ALLOWED = (versions.ROUTER_CHART.rsplit("/", 1)[0] + "/", versions.NVIDIA_DEVICE_PLUGIN_REPO)


def charts_from_allowed_registries(resources: list[Resource], config: dict[str, Any]) -> list[Violation]:
    allowed = tuple(config.get("allowedChartRegistries") or CHART_REGISTRIES_ALLOWED)
    out = []
    for r in resources:
        if r.type != CHART_TYPE:
            continue
        chart = str(r.props.get("chart") or "")
        if versions.is_local_chart(chart):
            if not config.get("allowLocalCharts"):
                out.append(Violation(r, f"chart {chart} is a local file; allow it with the pack's allowLocalCharts"))
            continue
        source = chart if "://" in chart else str((r.props.get("repositoryOpts") or {}).get("repo") or "")
        if not source or not any(source == a.rstrip("/") or source.startswith(a) for a in allowed):
            out.append(Violation(r, f"chart {chart} comes from {source or 'no registry'}, not one of {list(allowed)}"))
    return out


NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def selector_matches(selector: dict[str, Any], pod_labels: dict[str, str]) -> bool:
    """A Kubernetes label selector ({}: every pod) against a pod's labels."""
    if any(pod_labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in pod_labels
        ok = {
            "In": present and pod_labels.get(key) in values,
            "NotIn": not present or pod_labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(operator), False)
        if not ok:
            return False
    return True


def _ingress_selectors(resources: list[Resource]) -> list[tuple[str, dict[str, Any]]]:
    """(namespace, pod selector) of every NetworkPolicy that governs ingress."""
    out = []
    for r in resources:
        spec = r.props.get("spec") or {}
        if r.type == NETWORK_POLICY_TYPE and "Ingress" in (spec.get("policyTypes") or ["Ingress"]):
            out.append((_namespace(r), spec.get("podSelector") or {}))
    return out


def network_policy_per_pod(resources: list[Resource], config: dict[str, Any]) -> list[Violation]:
    """Every pod of the stack, and the router chart's EPP pods, is selected by an ingress NetworkPolicy."""
    if not config.get("requireNetworkPolicies", True):
        return []
    selectors = _ingress_selectors(resources)

    def covered(namespace: str, pod_labels: dict[str, str]) -> bool:
        return any(ns == namespace and selector_matches(sel, pod_labels) for ns, sel in selectors)

    out = [
        Violation(pod.owner, f"no NetworkPolicy selects the pods {pod.labels}: they accept traffic from anywhere")
        for pod in pods(resources)
        if not covered(_namespace(pod.owner), pod.labels)
    ]
    for chart in _charts(resources):
        values = chart_values(chart)
        created = (values["router"].get("inferencePool") or {}).get("create") is not False
        epp = router_pod_labels(str(chart.props.get("name") or chart.name), created)
        if not covered(str(chart.props.get("namespace") or "default"), epp):
            out.append(Violation(chart, f"no NetworkPolicy selects the router's pods {epp}"))
    return out


def hf_token_from_secret(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    return [
        Violation(pod.owner, f"container {c.get('name')} sets HF_TOKEN literally instead of from a Secret")
        for pod in pods(resources)
        for c in pod.containers()
        if "HF_TOKEN" in env(c) and "secretKeyRef" not in (env(c)["HF_TOKEN"].get("valueFrom") or {})
    ]


def cluster_hardening(resources: list[Resource], _: dict[str, Any]) -> list[Violation]:
    """GKE: private nodes, Workload Identity, shielded nodes. EKS: IRSA (an OIDC provider in the stack)."""
    out = []
    has_oidc = any(r.type == "aws:iam/openIdConnectProvider:OpenIdConnectProvider" for r in resources)
    for r in resources:
        p = r.props
        if r.type == "gcp:container/cluster:Cluster":
            if not (p.get("privateClusterConfig") or {}).get("enablePrivateNodes"):
                out.append(Violation(r, "GKE cluster without private nodes"))
            if not (p.get("workloadIdentityConfig") or {}).get("workloadPool"):
                out.append(Violation(r, "GKE cluster without Workload Identity"))
        if r.type in ("gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool"):
            shielded = ((p.get("nodeConfig") or {}).get("shieldedInstanceConfig")) or {}
            if p.get("nodeConfig") is not None and not shielded.get("enableSecureBoot"):
                out.append(Violation(r, "GKE nodes without Shielded VM secure boot"))
        if r.type == "aws:eks/cluster:Cluster" and not has_oidc:
            out.append(Violation(r, "EKS cluster without an IAM OIDC provider (IRSA)"))
    return out


RULES: list[Rule] = [
    Rule(
        "router-capacity-within-tier",
        "Router CPU index no larger than the CPU tier",
        "mandatory",
        router_capacity_within_tier,
    ),
    Rule(
        "memory-limit-covers-tier",
        "Pod memory limit holds the CPU tier and memory volumes",
        "mandatory",
        memory_limit_covers_tier,
    ),
    Rule("filesystem-tier-rwx", "Filesystem tier on a ReadWriteMany claim", "mandatory", filesystem_tier_needs_rwx),
    Rule("mooncake-rdma", "MooncakeStore pods request rdma/ib", "mandatory", mooncake_requests_rdma),
    Rule("lmcache-hash-seed", "LMCache clients set PYTHONHASHSEED", "mandatory", lmcache_hash_seed),
    Rule("lmcache-image-tags", "LMCache server and clients share one image tag", "mandatory", lmcache_image_tags_match),
    Rule(
        "lmcache-isolated-ipc",
        "lmcache.mp.isolated_ipc agrees with the server flag",
        "mandatory",
        lmcache_isolated_ipc_agrees,
    ),
    Rule("prefix-scoring-tokens", "Token-block prefix scoring has a tokenizer", "advisory", prefix_scoring_has_tokens),
    Rule(
        "tiers-beat-recompute",
        "Each offload tier reloads faster than recompute (else it saves accelerator time, not TTFT)",
        "advisory",
        tiers_beat_recompute,
        {"filesystemReadBandwidth": 0, "prefixTokens": payoff.ALERT_PREFIX_TOKENS},
    ),
    Rule(
        "prefix-caching-on",
        "--no-enable-prefix-caching only in test mode",
        "mandatory",
        prefix_caching_only_in_test_mode,
        {"testMode": False},
    ),
    Rule(
        "router-selects-servers", "Router matchLabels select a model server", "mandatory", router_selects_model_servers
    ),
    Rule("one-router-per-namespace", "One router release per namespace", "mandatory", one_router_per_namespace),
    Rule(
        "weights-fetched-once",
        "Weights fetched once onto shared storage, not per pod",
        "advisory",
        weights_fetched_once,
    ),
    Rule("images-pinned", "Images and charts pinned", "mandatory", images_pinned, {"allowMutableTags": False}),
    Rule(
        "image-prepull",
        "The image pre-pull runs on the serving pool and pulls every model-server image",
        "mandatory",
        image_prepull,
    ),
    Rule("resource-requests", "Every container requests cpu and memory", "mandatory", resource_requests),
    Rule(
        "privileged-containers",
        "Privileged only where the seeds require it",
        "mandatory",
        privileged_only_where_required,
        {"allowedContainers": list(PRIVILEGED_ALLOWED)},
    ),
    Rule(
        "root-containers",
        "Containers run as root only with an exemption",
        "mandatory",
        root_only_with_exemption,
    ),
    Rule("hardened-containers", "No escalation, capabilities dropped, seccomp", "mandatory", containers_hardened),
    Rule("host-namespaces", "No pod shares the node's namespaces", "mandatory", no_host_namespaces),
    Rule(
        "host-paths",
        "hostPath volumes only where allowed",
        "mandatory",
        host_paths_allowed,
        {"allowedHostPaths": list(HOST_PATHS_ALLOWED)},
    ),
    Rule("token-automount", "Service-account tokens only for API access", "mandatory", token_only_for_api_access),
    Rule(
        "network-policies",
        "Every pod behind an ingress NetworkPolicy",
        "mandatory",
        network_policy_per_pod,
        {"requireNetworkPolicies": True},
    ),
    Rule(
        "chart-registries",
        "Charts only from allowed registries",
        "mandatory",
        charts_from_allowed_registries,
        {"allowedChartRegistries": list(CHART_REGISTRIES_ALLOWED), "allowLocalCharts": False},
    ),
    Rule("hf-token-secret", "HF token only through a Secret", "mandatory", hf_token_from_secret),
    Rule("cluster-hardening", "Private nodes, workload identity, shielded nodes", "mandatory", cluster_hardening),
]
