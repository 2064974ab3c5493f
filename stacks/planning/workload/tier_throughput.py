"""The filesystem tier against its backend's documented limits (components/catalog/storage_backends.py): the
workload's replayed read and write rates per file system, and per node where the pods on one node share its
client (one NFS or Lustre mount), in the throughput mode the stack runs and in its backend's other modes beside
it. A rate past a limit means the tier will throttle: its stores and loads wait, so what the replay counts as hits
arrive later, and a per-GB bill is what can move, not what the replay asked for.

Without a workload only the evictor's upper-bound store rate is known: compared, never stamped (the policy pack's
`filesystem-tier-within-limits` judges measured rates only). The records are cost_records.py's, beside the cost
that prices them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from components.catalog.prices import HOURS_PER_MONTH
from components.catalog.storage_backends import Throughput, ThroughputMode
from components.units import GB, MiB
from stacks.config import StackConfig
from stacks.config.backend_choice import backend_of, configured_provisioned, mode_of, provisioning_of, region_of
from stacks.config.errors import ConfigError
from stacks.planning.workload.cost_records import Against, Demand, ModeLimits, TierThroughput


def tier_throughput(config: StackConfig, demand: Demand | None, *, other_modes: bool = True) -> TierThroughput:
    """The tier's limits in the mode the stack runs (and, `other_modes`, its backend's others) against `demand`.
    A provisioned mode's throughput is the config's, else derived from a measured demand (`check_rendered`)."""
    backend, running = backend_of(config), mode_of(config)
    region = region_of(config)
    modes = [running, *(m for m in backend.modes.values() if m is not running and other_modes)]
    limits = [_limits(config, m, demand, region) for m in modes]
    return TierThroughput(backend, region, demand, limits[0], tuple(limits[1:]))


def check_rendered(throughput: TierThroughput | None) -> None:
    """A provisioned mode renders at a throughput: the config's, or the one a workload's replay derived."""
    if throughput is None or throughput.running.mode.provisioned_cap is None or throughput.provisioned_mibps:
        return
    raise ConfigError(
        f"storage.{throughput.backend.settings}.provisioned_mibps",
        None,
        f"throughput_mode {throughput.running.mode.key} needs its MiB/s: set it, or a workload (workload.trace or"
        " workload.shared_prefix) whose replayed rates derive it",
    )


def provisioned_for(mode: ThroughputMode, demand: Demand | None, region: str | None) -> float | None:
    """Bytes/s a provisioned mode is derived at: what the writes and (at its read metering) the reads need, in
    whole MiB/s, at least 1, at most the region's cap; None without a measured demand."""
    if mode.provisioned_cap is None or demand is None or not demand.measured:
        return None
    need = max(demand.write, (demand.read or 0.0) / mode.read_per_provisioned)
    cap = mode.provisioned_cap.at(region).write or math.inf
    return float(max(1, min(math.ceil(need / MiB), math.floor(cap / MiB)))) * MiB


def _limits(config: StackConfig, mode: ThroughputMode, demand: Demand | None, region: str | None) -> ModeLimits:
    provisioned = None
    if mode.provisioned_cap is not None:
        provisioned = configured_provisioned(config) if mode is mode_of(config) else None
        provisioned = provisioned if provisioned is not None else provisioned_for(mode, demand, region)
    fs = mode.file_system(provisioning_of(config, provisioned))
    return ModeLimits(mode, fs, provisioned, _against(mode, fs, demand) if demand is not None else ())


def _against(mode: ThroughputMode, fs: Throughput, demand: Demand) -> tuple[Against, ...]:
    out = []
    if demand.read is not None and fs.read is not None:
        out.append(Against("reads per file system", demand.read, fs.read, fs.source))
    if fs.write is not None:
        out.append(Against("writes per file system", demand.write, fs.write, fs.source))
    client = mode.per_client
    if client is not None:
        shared = f"{demand.pods_per_client} pods on one node share its client" if demand.pods_per_client > 1 else ""
        what = "reads and writes per client" if demand.read is not None else "writes per client"
        out.append(Against(f"{what}{f' ({shared})' if shared else ''}", demand.per_client, client.value, client.cited))
    return tuple(out)


@dataclass(frozen=True)
class Charge:
    """A line a throughput mode bills: its price key, the units of that price per hour and its words (the formula
    shows the price as `{usd}`)."""

    what: str
    item: str
    per_hour: float
    formula: str


def charges(short: str, limits: ModeLimits, demand: Demand | None) -> list[Charge] | None:
    """What a mode bills at the demand: per GB read and written at what can move (the demand capped by the limits),
    or the MiB/s it is provisioned with per month; None where it bills per GB and no workload measured the rates."""
    mode, out = limits.mode, []
    if mode.billed_provisioned is not None and limits.provisioned_mibps is not None:
        mibps = limits.provisioned_mibps
        what = f"{short} {mode.title} throughput: {mibps:,} MiB/s provisioned"
        formula = f"{mibps:,} MiB/s x ${{usd}}/MiB/s-month / {HOURS_PER_MONTH} h"
        out.append(Charge(what, mode.billed_provisioned, mibps / HOURS_PER_MONTH, formula))
    if mode.billed_per_gb is None:
        return out
    if demand is None or not demand.measured:
        return None
    asked = (demand.read or 0.0, demand.write)
    for item, rate, want, verb in zip(
        mode.billed_per_gb, limits.moved(demand), asked, ("reads", "writes"), strict=True
    ):
        source = "the workload's replay" if rate >= want else f"the replay's {want / 1e6:,.2f}, throttled to its limits"
        what = f"{short} {mode.title} {verb}: {rate / 1e6:,.2f} MB/s ({source})"
        out.append(Charge(what, item, rate * 3600 / GB, f"{rate / 1e6:,.2f} MB/s x 3600 s / 1e9 x ${{usd}}/GB"))
    return out


def gbps(rate: float) -> str:
    return f"{rate / GB:,.2f} GB/s"


def demand_of(
    config: StackConfig, pods: int, rates: tuple[float, float] | None, upper_bound_write: float, upper_source: str
) -> Demand:
    """The tier's demand: the workload's replayed (read, write) rates where there are any, else the evictor's
    upper-bound store rate (writes only); `pods`: the model-server pods mounting the tier, spread over the serving
    pool's nodes (one each where no pool is described)."""
    key = config.cache.node_pool
    nodes = config.node_pools[key].node_count if key and key in config.node_pools else pods
    clients = max(1, min(nodes, pods))
    if rates is None:
        return Demand(None, upper_bound_write, pods, clients, False, upper_source)
    source = "the workload's replay at the sizes the stack runs (filesystem tier at what its evictor holds)"
    return Demand(rates[0], rates[1], pods, clients, True, source)
