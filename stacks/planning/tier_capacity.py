"""The shared filesystem tier's capacity: the store rate the stack is sized for, the evictor's watermarks
(`components/formulas/shared_tier_capacity.py`) and its workload beside the tier's claim."""

from __future__ import annotations

import functools

from components.formulas import shared_tier_capacity as formulas
from components.formulas.shared_tier_capacity import Capacity, StoreRate
from components.manifest import Manifest
from components.specs import network, payoff_table
from components.specs import storage as storage_spec
from components.specs import tier_evictor as spec
from components.specs.model_cache import TIER_SUBPATH, ModelCache
from components.specs.servers.base import FILES_STORAGE_CLAIM
from components.specs.startup import AwaitBudget
from components.specs.workloads import NAMESPACE, Await, Workload
from components.units import GiB
from stacks.config import StackConfig
from stacks.config.errors import ConfigError
from stacks.planning import cold_starts
from stacks.planning.resolution import Resolved
from stacks.planning.workload.shared_tier import SharedTier

EFS_DEFAULT_BUDGET = 9000 * GiB
EVICTOR_METRICS = [
    "tier_evictor_usage_ratio against tier_evictor_high_watermark_ratio (the shared tier's usage, its evictor)",
    "tier_evictor_deleted_bytes_total, tier_evictor_deleted_files_total, tier_evictor_scan_seconds (what each pass"
    " deletes, how long its scan takes)",
]


def shared_tier(
    stack: Resolved, payoff: payoff_table.Payoff, replicas: int, measured: StoreRate | None = None
) -> SharedTier | None:
    """None: no filesystem tier on the shared claim. `replicas`: the most the stack runs; `measured`: the store
    rate the workload's replay gives (stacks/planning/workload/workload_sizing.py); without one, the upper bound."""
    if not stack.uses_tier_claim:
        return None
    config, pods_per_replica = stack.config, stack.group_size
    kv_bytes_per_token = round(payoff.kv_bytes_per_pod * pods_per_replica)
    rate = measured or store_rate(payoff, replicas, pods_per_replica)
    block = file_bytes(stack, kv_bytes_per_token)
    managed = config.storage.evictor.mode == "auto"
    if not managed:  # nothing evicts: only the time to fill is shown
        poll = None if spec.USAGE[config.storage.backend] == "scan" else formulas.STATVFS_POLL_SECONDS
        tier = formulas.derive(budget(config), rate, config.storage.evictor.scan_rate, block, poll)
        return SharedTier(tier, False, config.storage.backend)
    return SharedTier(capacity(config, rate, block), True, config.storage.backend)


def store_rate(payoff: payoff_table.Payoff, replicas: int, pods_per_replica: int) -> StoreRate:
    """Without a workload: every replica prefilling at full speed and storing every token (an upper bound)."""
    return formulas.upper_bound_store_rate(
        replicas, payoff.recompute_seconds, payoff.kv_bytes_per_pod * pods_per_replica, payoff.prefix_tokens
    )


def file_bytes(stack: Resolved, kv_bytes_per_token: int) -> int:
    """One file of the tier: the connector's transfer block of one rank's share of the KV."""
    tokens, _ = stack.connector.transfer_block(stack.choice)
    return max(1, tokens * kv_bytes_per_token // stack.tensor_parallelism)


def budget(config: StackConfig) -> int:
    """The bytes the tier may hold: the claim's size; on EFS (elastic, its claim's size nominal) the evictor's
    budget, by default the guide's claim (manifests/pvc.yaml, 9000Gi)."""
    settings = config.storage.evictor
    if settings.budget is not None:
        return settings.budget.bytes
    return EFS_DEFAULT_BUDGET if config.storage.backend == "aws-efs" else config.storage.size.bytes


def capacity(config: StackConfig, rate: StoreRate, block_file_bytes: int) -> Capacity:
    """The evictor's watermarks: derived, or the config's checked against the same bounds. Derived ones that
    cannot keep up are an error at a measured rate, a warning in the summary at the upper bound."""
    settings, size = config.storage.evictor, budget(config)
    poll = None if spec.USAGE[config.storage.backend] == "scan" else formulas.STATVFS_POLL_SECONDS
    if settings.high_watermark is None or settings.low_watermark is None:
        derived = formulas.derive(size, rate, settings.scan_rate, block_file_bytes, poll)
        problem = formulas.derived_problem(derived)
        if problem and not rate.upper_bound:
            raise ConfigError(
                "storage.size",
                config.storage.size.human(),
                f"{problem}; grow it, or raise storage.evictor.scan_rate if the backend scans faster",
            )
        return derived
    high, low = as_rendered(settings.high_watermark, settings.low_watermark)
    given = formulas.given(size, rate, settings.scan_rate, block_file_bytes, high, low, poll)
    problems = given.problems()
    if problems and not (rate.upper_bound and config.workload is not None):  # a workload's rate judges them
        raise ConfigError(
            "storage.evictor.low_watermark",
            settings.low_watermark,
            f"{'; '.join(problems)} (at {rate.bytes_per_second / 1e9:.2f} GB/s, {rate.source})",
        )
    return given


def as_rendered(high_percent: float, low_percent: float) -> tuple[float, float]:
    """Hand-set watermarks as the evictor will read them from its environment (percent_text, then its parse),
    refused where it would refuse them: it exits unless 0 < low < high <= 100%."""
    high_text, low_text = spec.percent_text(high_percent / 100), spec.percent_text(low_percent / 100)
    high, low = spec.as_read(high_text), spec.as_read(low_text)
    if not 0 < low < high <= 1:
        raise ConfigError(
            "storage.evictor.low_watermark",
            low_percent,
            f"renders as LOW_WATERMARK_PERCENT={low_text} beside HIGH_WATERMARK_PERCENT={high_text}, which the"
            " evictor refuses (it needs 0 < low < high <= 100): set watermarks apart in their first ten digits",
        )
    return high, low


def evictor_workload(
    config: StackConfig, tier: Capacity, cache: ModelCache | None, live_namespaces: tuple[str, ...]
) -> Workload:
    """One replica beside the tier's claim, after it; only the scraper may connect (its metrics).
    `live_namespaces`: the tier's namespaces the servers write, reclaimed after every other."""
    shared = cache is not None and cache.shared_with_tier
    evictor = spec.EvictorSpec(
        namespace=config.namespace,
        image=config.storage.evictor.image,
        claim=FILES_STORAGE_CLAIM,
        sub_path=TIER_SUBPATH if shared else None,
        backend=config.storage.backend,
        high_percent=spec.percent_text(tier.high),
        low_percent=spec.percent_text(tier.low),
        min_age_seconds=round(tier.min_age_seconds),
        poll_seconds=round(formulas.STATVFS_POLL_SECONDS),
        max_candidates=tier.max_candidates,
        capacity_bytes=tier.capacity_bytes,
        live_namespaces=live_namespaces,
    )
    return Workload(
        spec.WORKLOAD,
        spec.evictor_manifests(evictor),
        needs=(NAMESPACE, storage_spec.WORKLOAD.key),
        rolls="default",
        awaited=Await(
            AwaitBudget(spec.NAME, cold_starts.daemon_cold_start(evictor.image, 0), 1), "Deployment", "beside"
        ),
        ingress=functools.partial(_policy, dict(spec.LABELS)),
    )


def _policy(pod_labels: dict[str, str], traffic: network.StackTraffic) -> Manifest:
    rules = [network.Rule([traffic.scraper], [spec.METRICS_PORT])]
    return network.policy(spec.NAME, traffic.namespace, {"matchLabels": pod_labels}, rules)
