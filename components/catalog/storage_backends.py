"""The filesystem tier's backends, one record per `storage.backend`: what each is and everything the config, the
plan, the evictor, the review and the policy pack read of it. Its documented throughput limits (per file system
and per client, read and write, by throughput mode and region, each with its source), the evictor's usage source
and timestamp, its StorageClass, the evictor's default budget, who creates it, what it is billed for and its words
in the summary. `storage.backend` is typed from this registry (`BackendKey`), and `tests/test_registries.py`
allows no comparison of a backend's key outside the registries: a new backend (Filestore, FSx for Lustre) is a
record here and, where a cloud creates it, its component and its entry in that cloud's side (CONTRIBUTING.md).

Rates are bytes per second; AWS's GiBps and MiBps are binary, Managed Lustre's MB/s per TiB decimal per binary.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from components.catalog.key_lists import literal_of
from components.catalog.rates import LUSTRE_CAPACITY_UNIT, LUSTRE_THROUGHPUT_UNIT, Figure
from components.units import GiB, MiB

EFS_QUOTAS = "Amazon EFS user guide, Amazon EFS quotas (docs.aws.amazon.com/efs/latest/ug/limits.html)"
EFS_PERFORMANCE = "Amazon EFS user guide, Amazon EFS performance (docs.aws.amazon.com/efs/latest/ug/performance.html)"
EFS_METERING = (
    "Amazon EFS pricing: Provisioned Throughput meters reads at a 1:3 ratio, 3 MB/s of reads or 1 MB/s of writes per"
    " MB/s provisioned (aws.amazon.com/efs/pricing)"
)
LUSTRE_TIERS = "Google Cloud Managed Lustre docs, Performance tiers: throughput per TiB of capacity"
LUSTRE_LIMITS = "Google Cloud Managed Lustre docs, Quotas and limits: capacity per performance tier"


@dataclass(frozen=True)
class Throughput:
    """Bytes/s one file system (or one client of it) reads and writes at most (None: none known)."""

    read: float | None
    write: float | None
    source: str


@dataclass(frozen=True)
class ByRegion:
    """A limit that differs by region: `listed` in `regions`, `elsewhere` in every other region, and where the
    stack's region is not known (the lower, so a plan never assumes more than it may get)."""

    regions: frozenset[str]
    listed: Throughput
    elsewhere: Throughput

    def at(self, region: str | None) -> Throughput:
        if region in self.regions:
            return dataclasses.replace(self.listed, source=f"{self.listed.source} ({region})")
        where = f"{region}" if region is not None else "the region not known: the lower figure"
        return dataclasses.replace(self.elsewhere, source=f"{self.elsewhere.source} ({where})")


@dataclass(frozen=True)
class Provisioning:
    """What a backend's limits follow from, as the stack configures it."""

    region: str | None  # where it runs (None: not known)
    capacity_bytes: int  # the claim's size (Managed Lustre's provisioned capacity)
    per_tib: int | None  # MB/s per TiB (Managed Lustre's performance tier)
    read_bandwidth: int | None  # an existing StorageClass's read bytes/s (`storage.read_bandwidth`)
    provisioned: float | None  # bytes/s a provisioned mode is set to


@dataclass(frozen=True)
class ThroughputMode:
    """One way a backend is provisioned for throughput: its limits, how it is billed and its words."""

    key: str  # as the config names it (`storage.efs.throughput_mode`)
    title: str  # how the Cost section names it
    file_system: Callable[[Provisioning], Throughput]  # its per-file-system limits, as provisioned
    per_client: Figure | None = None  # bytes/s one client (one node's mount) reads and writes together
    billed_per_gb: tuple[str, str] | None = None  # the price keys per GB read and per GB written
    billed_provisioned: str | None = None  # the price key per MiB/s-month provisioned
    # A provisioned mode: bytes/s of reads one provisioned byte/s carries (EFS meters reads at a third) and the
    # most it can be set to, by region (its write limit).
    read_per_provisioned: float = 1.0
    provisioned_cap: ByRegion | None = None
    words: str = ""  # what it is, for `storage.efs.throughput_mode`'s description


@dataclass(frozen=True)
class CapacityStep:
    """Managed Lustre's capacity at one performance tier, in GiB: the minimum, the step up to `threshold` and the
    step above it."""

    minimum: int
    step: int
    threshold: int | None
    step_above: int


@dataclass(frozen=True)
class StorageBackend:
    key: str  # the config's `storage.backend`
    title: str  # how the summary names it
    short: str  # ... and its cost lines
    does: str  # what it is, for `storage.backend`'s description
    created_on: str | None  # the `cluster.provider` whose cluster stack creates it (None: a class the cluster has)
    storage_class: str | None  # the StorageClass it creates (None: `storage.storage_class`, the cluster's)
    modes: Mapping[str, ThroughputMode]  # its throughput modes, the default first
    # The evictor: the timestamp it orders by and why, and where it reads the usage (statvfs, or what its scan
    # counts where the file system reports no usage of its own).
    evictor_timestamp: Literal["atime", "mtime"]
    timestamp_why: str
    evictor_usage: Literal["statvfs", "scan"]
    # Elastic: the claim's size is nominal; the evictor holds the tier to a budget (`storage.evictor.budget`).
    default_budget: int | None = None
    budget_from: str = ""
    settings: str | None = None  # the `storage.<section>` that configures it, where it has one
    reads_configured_bandwidth: bool = False  # its read bandwidth is `storage.read_bandwidth`
    one_claim_per_volume: bool = False  # a cluster stack's volume binds one serving stack's claim
    capacity_steps: Mapping[int, CapacityStep] = field(default_factory=dict)  # by MB/s per TiB
    # What it is billed for beyond throughput: the bytes it holds, or its provisioned capacity (a price key by
    # performance tier, `{per_tib}`); None: nothing the stack pays.
    storage_billed: Literal["held", "capacity"] | None = None
    storage_price: str | None = None
    throttle_metric: str | None = None  # its own throttling metric and where it is published

    @property
    def created(self) -> bool:
        return self.created_on is not None

    @property
    def elastic(self) -> bool:
        return self.default_budget is not None

    @property
    def default_mode(self) -> ThroughputMode:
        return next(iter(self.modes.values()))

    def mode(self, key: str | None) -> ThroughputMode:
        return self.modes[key] if key is not None else self.default_mode

    def storage_item(self, per_tib: int | None) -> str | None:
        return None if self.storage_price is None else self.storage_price.format(per_tib=per_tib)


def _capped(cap: ByRegion, read_per_provisioned: float) -> Callable[[Provisioning], Throughput]:
    """A provisioned mode's limits: what is provisioned, up to the region's cap."""

    def limits(p: Provisioning) -> Throughput:
        top = cap.at(p.region)
        if p.provisioned is None:
            return top
        read = min(top.read or math.inf, p.provisioned * read_per_provisioned)
        write = min(top.write or math.inf, p.provisioned)
        return Throughput(
            read,
            write,
            f"{p.provisioned / MiB:,.0f} MiB/s provisioned, reads at {read_per_provisioned:g}x ({EFS_METERING}), up"
            f" to {top.source}",
        )

    return limits


def per_tib(source: str) -> Callable[[Provisioning], Throughput]:
    """A Lustre's limits: its tier's MB/s per TiB x the capacity, read and write alike (`source`: its tiers' page)."""

    def limits(p: Provisioning) -> Throughput:
        tib = p.capacity_bytes / LUSTRE_CAPACITY_UNIT
        rate = (p.per_tib or 0) * LUSTRE_THROUGHPUT_UNIT * tib
        return Throughput(rate, rate, f"{p.per_tib} MB/s per TiB x {tib:.2f} TiB ({source})")

    return limits


def _configured(p: Provisioning) -> Throughput:
    if p.read_bandwidth is None:
        return Throughput(None, None, "an existing StorageClass; set `storage.read_bandwidth` to derive it")
    return Throughput(float(p.read_bandwidth), None, "stack config `storage.read_bandwidth`")


EFS_ELASTIC_FS = ByRegion(
    frozenset({"us-east-2", "us-east-1", "us-west-2", "ap-southeast-1", "ap-northeast-1", "eu-central-1", "eu-west-1"}),
    Throughput(60 * GiB, 5 * GiB, f"{EFS_QUOTAS}: Elastic, Regional, per file system"),
    Throughput(10 * GiB, 1 * GiB, f"{EFS_QUOTAS}: Elastic, Regional, per file system, all other Regions"),
)
EFS_PROVISIONED_FS = ByRegion(
    frozenset({"us-east-2", "us-east-1", "us-west-2", "eu-west-1"}),
    Throughput(10 * GiB, 3.33 * GiB, f"{EFS_QUOTAS}: Provisioned, Regional, per file system"),
    Throughput(3 * GiB, 1 * GiB, f"{EFS_QUOTAS}: Provisioned, Regional, per file system, all other Regions"),
)

EFS_ELASTIC = ThroughputMode(
    "elastic",
    "Elastic",
    lambda p: EFS_ELASTIC_FS.at(p.region),
    per_client=Figure(1500 * MiB, f"{EFS_PERFORMANCE}: per-client read/write, Elastic throughput"),
    billed_per_gb=("efs-read", "efs-write"),
    words="elastic: billed per GB read and written, up to its per-file-system limits",
)
EFS_PROVISIONED = ThroughputMode(
    "provisioned",
    "Provisioned",
    _capped(EFS_PROVISIONED_FS, 3.0),
    per_client=Figure(500 * MiB, f"{EFS_PERFORMANCE}: per-client read/write, Provisioned throughput"),
    billed_provisioned="efs-provisioned",
    read_per_provisioned=3.0,
    provisioned_cap=EFS_PROVISIONED_FS,
    words="provisioned: a fixed MiB/s billed per month whatever moves (storage.efs.provisioned_mibps, else derived"
    " from the workload's replayed rates), with lower caps",
)
LUSTRE_TIER = ThroughputMode("per-tib", "throughput per TiB", per_tib(LUSTRE_TIERS))
CONFIGURED = ThroughputMode("configured", "the StorageClass's throughput", _configured)

EXISTING = StorageBackend(
    key="existing",
    title="an existing StorageClass",
    short="the StorageClass",
    does="a StorageClass the cluster has (storage.storage_class)",
    created_on=None,
    storage_class=None,
    modes={CONFIGURED.key: CONFIGURED},
    evictor_timestamp="atime",
    timestamp_why="the later of atime and mtime: never worse than mtime alone, whatever the StorageClass keeps of"
    " a read's atime",
    evictor_usage="statvfs",
    reads_configured_bandwidth=True,
)
GCP_LUSTRE = StorageBackend(
    key="gcp-lustre",
    title="GCP Managed Lustre",
    short="Managed Lustre",
    does="GCP Managed Lustre, created with a GKE cluster",
    created_on="gke",
    storage_class="lustre-class",
    modes={LUSTRE_TIER.key: LUSTRE_TIER},
    evictor_timestamp="atime",
    timestamp_why="the later of atime and mtime: Lustre keeps a read's atime once it is a minute newer (the MDS's"
    " atime_diff), and relatime lets the first read after a write through, so a block read since it was written"
    " ranks after one never read",
    evictor_usage="statvfs",
    settings="lustre",
    one_claim_per_volume=True,
    capacity_steps={  # storage.md, from GCP's performance tiers page
        1000: CapacityStep(9000, 9000, 1530000, 72000),
        500: CapacityStep(18000, 18000, 3060000, 144000),
        250: CapacityStep(36000, 36000, 6120000, 288000),
        125: CapacityStep(72000, 72000, None, 72000),
    },
    storage_billed="capacity",
    storage_price="lustre-{per_tib}",
    throttle_metric="Cloud Monitoring's Managed Lustre instance metrics (docs.cloud.google.com/managed-lustre/docs/"
    "monitoring): not among what this stack's monitoring scrapes (its pods), so no alert rule reads them",
)
AWS_EFS = StorageBackend(
    key="aws-efs",
    title="AWS EFS",
    short="EFS",
    does="AWS EFS, created with an EKS cluster (elastic: the claim's size is nominal)",
    created_on="eks",
    storage_class="efs-sc",
    modes={EFS_ELASTIC.key: EFS_ELASTIC, EFS_PROVISIONED.key: EFS_PROVISIONED},
    evictor_timestamp="mtime",
    timestamp_why="mtime: EFS does not update atime on reads (AWS EFS user guide, unsupported NFSv4 features), so the"
    " order is the blocks' age, first in first out",
    evictor_usage="scan",
    default_budget=9000 * GiB,
    budget_from="the guide's claim (manifests/pvc.yaml, 9000Gi)",
    settings="efs",
    storage_billed="held",
    storage_price="efs-storage",
    throttle_metric="CloudWatch's AWS/EFS PercentIOLimit, and MeteredIOBytes against PermittedThroughput: not among"
    " what this stack's monitoring scrapes (its pods; no CloudWatch exporter), so no alert rule reads them",
)

STORAGE_BACKENDS: dict[str, StorageBackend] = {b.key: b for b in (EXISTING, GCP_LUSTRE, AWS_EFS)}
CREATED_BACKENDS: dict[str, StorageBackend] = {k: b for k, b in STORAGE_BACKENDS.items() if b.created}

if TYPE_CHECKING:  # mypy cannot evaluate a Literal built from a registry (key_lists.literal_of)
    BackendKey = str
    CreatedBackendKey = str
    CreatedClass = str
    EfsModeKey = str
else:
    BackendKey = literal_of(STORAGE_BACKENDS)  # `storage.backend`
    CreatedBackendKey = literal_of(CREATED_BACKENDS)  # `llmdCluster`'s storage.backend
    CreatedClass = literal_of(b.storage_class for b in CREATED_BACKENDS.values())  # ... and its class
    EfsModeKey = literal_of(AWS_EFS.modes)  # `storage.efs.throughput_mode`


def created_on(provider: str) -> tuple[str, ...]:
    """The backends a cluster of `provider` creates."""
    return tuple(k for k, b in CREATED_BACKENDS.items() if b.created_on == provider)


def described() -> str:
    """`storage.backend`'s description: each backend and what it is."""
    return "; ".join(f"{b.key}: {b.does}" for b in STORAGE_BACKENDS.values())
