"""Does each tier pay off (advisory): a reload beats recomputing, with the payoff's arithmetic
(components/formulas/payoff.py) over what the rendered servers and storage declare, for the model geometry and at
the transfer block each model-server workload is stamped with (`llm-d.ai/model-geometry`, the plan's;
`llm-d.ai/kv-transfer-block-tokens`, its connector's). A server it cannot judge is a violation saying why."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.accelerators import ACCELERATORS
from components.catalog.cloud_resources import EFS, LUSTRE
from components.catalog.labels import ACCELERATOR_PROFILE_LABEL, KV_CONNECTOR_LABEL, KV_TRANSFER_BLOCK_ANNOTATION
from components.catalog.models import ModelSpec
from components.catalog.storage_backends import STORAGE_BACKENDS, Provisioning
from components.formulas import payoff
from components.units import GiB, MiB
from policies.checks.inventory import accelerator_of, model_of, transfer_block_of
from policies.checks.rule_types import Settings, Violation, setting
from policies.resources import Pod, Resource, pods, rwx_claims, served_model


@dataclass(frozen=True)
class TieredServer:
    """A model server with an offload tier, as the rule reads it from the rendered pod."""

    pod: Pod
    model: ModelSpec
    accelerator: str
    devices: int  # per pod
    group: int  # pods per replica (LeaderWorkerSet size)
    pods: int  # pods of this workload
    block_tokens: int  # the workload's stamp: tokens per block its connector moves (inventory.transfer_block_of)
    claims: list[str]


def tiered_servers(resources: list[Resource]) -> list[TieredServer]:
    """The model servers with an offload tier the rule can judge (`unjudged` says why the others cannot be)."""
    return _read(resources)[0]


def unjudged(resources: list[Resource]) -> list[tuple[Pod, str]]:
    """Model servers with an offload tier the rule cannot judge, and why: its workload's model-geometry or
    transfer-block stamp is missing or not one, or it runs on no catalog profile whose devices it holds."""
    return _read(resources)[1]


def _read(resources: list[Resource]) -> tuple[list[TieredServer], list[tuple[Pod, str]]]:
    judged, refused = [], []
    for pod in pods(resources):
        if not pod.labels.get(KV_CONNECTOR_LABEL):  # unlabelled: reported by identity-labels
            continue
        for container in pod.containers(init=False):
            served = served_model(container)
            if served is None:
                continue
            model = model_of(pod, served)
            found = accelerator_of(resources, pod, container)
            block = transfer_block_of(pod)
            if isinstance(model, str) or found is None or block is None:
                why = [model] if isinstance(model, str) else []
                if found is None:  # reported by identity-labels too
                    why.append(f"it holds no devices of a catalog profile that its {ACCELERATOR_PROFILE_LABEL} names")
                if block is None:  # reported by identity-labels too
                    why.append(f"its {KV_TRANSFER_BLOCK_ANNOTATION} stamp is not a positive whole number")
                refused.append((pod, "; ".join(why)))
                continue
            spec = pod.owner.props.get("spec") or {}
            group = int(((spec.get("leaderWorkerTemplate") or {}).get("size")) or 1)
            claims = [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.spec.get("volumes") or []]
            judged.append(
                TieredServer(
                    pod, model, found[0], found[1], group, int(spec.get("replicas") or 1) * group,
                    block, [c for c in claims if c],
                )
            )  # fmt: skip
    return judged, refused


@dataclass(frozen=True)
class TierPayoffConfig(Settings):
    filesystem_read_bandwidth: float = setting(
        "filesystemReadBandwidth",
        0,
        "bytes/s of the shared filesystem where the stack declares none the rule knows (0: not known)",
    )
    prefix_tokens: int = setting(
        "prefixTokens",
        payoff.ALERT_PREFIX_TOKENS,
        "the prefix length the payoff is judged at (the stack's `monitoring.alerts.prefix_tokens`)",
    )


def _shared_read(resources: list[Resource], config: TierPayoffConfig) -> tuple[float, float | None, str] | None:
    """(aggregate, per-client limit, what) of the stack's shared filesystem; None: not known."""
    for r in resources:
        if r.type == LUSTRE.token:
            tput, size = (
                float(r.props.get("perUnitStorageThroughput") or 0),
                float(r.props.get("capacityGib") or 0) * GiB,
            )
            aggregate = payoff.lustre_aggregate(tput, size)
            return aggregate, None, f"Managed Lustre {tput:g} MB/s per TiB x {payoff.lustre_tib(size):.2f} TiB"
        modes = STORAGE_BACKENDS[str(EFS.storage_backend)].modes
        if r.type == EFS.token and r.props.get("throughputMode") in modes:
            mode = modes[str(r.props["throughputMode"])]
            mibps = r.props.get("provisionedThroughputInMibps")
            provisioned = float(mibps) * MiB if isinstance(mibps, (int, float)) else None
            limits = mode.file_system(Provisioning(None, 0, None, None, provisioned))  # the region is not known here
            client = mode.per_client.value if mode.per_client else None
            if limits.read is not None:
                return limits.read, client, f"EFS {mode.title} throughput"
    if config.filesystem_read_bandwidth:
        return config.filesystem_read_bandwidth, None, "the configured filesystemReadBandwidth"
    return None


def tiers_beat_recompute(resources: list[Resource], config: TierPayoffConfig) -> list[Violation]:
    """A tier pays off in latency only when a reload beats recomputing: KV bytes / recompute time per token at
    the configured prefix length (`prefixTokens`; the stack's `monitoring.alerts.prefix_tokens`), with the
    payoff table's arithmetic (components/formulas/payoff.py)."""
    servers = tiered_servers(resources)
    rwx = rwx_claims(resources)
    shared = _shared_read(resources, config)
    readers = sum(s.pods for s in servers if rwx & set(s.claims))
    configured = config.prefix_tokens
    out = [
        Violation(
            pod.owner,
            f"cannot judge whether the tiers of {pod.owner.name} reload faster than recomputing its model: {why}",
        )
        for pod, why in unjudged(resources)
    ]
    for s in servers:
        rates = ACCELERATORS[s.accelerator].rates
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
