"""Prices of what the stacks create, each with its rate kind, its source and the date it was read: the machine
types and TPU slices of the node pools (`machines.py`), the clusters' management fees, EFS storage and its
elastic throughput. Written here by hand (one row per item, region and rate kind); `./run golden` writes it out as
tests/fixtures/prices/prices.csv, where the refresh check compares each row with a second source (the fixture's
SOURCE.md says which, and how to refresh them). `pricing.rate` chooses the kind a stack is priced at and
`pricing.prices` overrides any row (negotiated rates). A price not here is not guessed: the plan names it unpriced.
"""

from __future__ import annotations

import csv
import io
from dataclasses import astuple, dataclass, fields
from typing import Literal, get_args

# The billing month the GCP and AWS price pages convert hourly prices with.
HOURS_PER_MONTH = 730

# What a price buys: on demand (list price, no commitment), spot (preemptible capacity), committed (a 1-year
# commitment's rate) or flex (flex-start, capacity the provider grants when it has it).
RateKind = Literal["on-demand", "spot", "committed", "flex"]
RATE_KINDS: tuple[RateKind, ...] = get_args(RateKind)
Unit = Literal["hour", "GB-month", "GiB-month", "GB"]  # USD per; GB: decimal, as the price pages write them

# Where the rows were read (SOURCE.md gives each one's URL, commit and what it is built from).
CLOUD_BILLING = "cyclenerd-pricing/gcp@fd66b26f"  # the Cloud Billing Catalog, as Cyclenerd's pricing.yml has it
SKYPILOT_GCP = "skypilot-catalog/gcp@006059e0"
SKYPILOT_AWS = "skypilot-catalog/aws@00148f2a"
GKE_PAGE = "cloud.google.com/kubernetes-engine/pricing"
EKS_PAGE = "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing"
EFS_PAGE = "aws.amazon.com/efs/pricing"
EFS_SECONDARY = "secondary: factualminds.com EFS pricing post, June 2026 (us-east-1)"
VERTEX_SECONDARY = "secondary: a capture of the Vertex AI pricing page, 2026-07-22"


@dataclass(frozen=True)
class Price:
    item: str  # a machine type, `gke-cluster`, `eks-cluster`, `efs-storage`, `efs-read`, `efs-write`
    region: str
    kind: RateKind
    unit: Unit
    usd: float
    source: str  # where the figure was read (a catalog at a commit, a price page, or `secondary: ...`)
    as_of: str  # when it was read (ISO date)
    how: str  # the rows it was computed from, where it is not one row


_A3 = "a3-highgpu-8g"
_CT5P = "row tpu-v5p-11776 {} / 11776 cores x 8 cores (4 chips x 2 TensorCores), its {} column"
_M6I = "2 x row m6i.xlarge 0.192 (m6i prices scale with vCPUs: row m6i.metal 6.144 = 32 x 0.192)"
_FEE = "cluster management fee per cluster (the free tier's one zonal cluster not counted)"
_EKS_FEE = "control plane per cluster on a version in standard support"
_BILLING_1Y = "its month_1y / 730 (1-year commitment)"

PRICES: tuple[Price, ...] = (
    Price(_A3, "us-central1", "on-demand", "hour", 88.49, CLOUD_BILLING, "2026-07-30", "its hour (VM and 8 H100s)"),
    Price(_A3, "europe-west4", "on-demand", "hour", 112.54048, CLOUD_BILLING, "2026-07-30", "its hour"),
    Price(_A3, "us-central1", "spot", "hour", 50.60954, CLOUD_BILLING, "2026-07-30", "its hour_spot"),
    Price(_A3, "europe-west4", "spot", "hour", 44.11878, CLOUD_BILLING, "2026-07-30", "its hour_spot"),
    Price(_A3, "us-central1", "committed", "hour", 61.38367, CLOUD_BILLING, "2026-07-30", _BILLING_1Y),
    Price(_A3, "europe-west4", "committed", "hour", 78.07119, CLOUD_BILLING, "2026-07-30", _BILLING_1Y),
    Price(
        "ct5p-hightpu-4t",
        "us-central1",
        "on-demand",
        "hour",
        16.8,
        SKYPILOT_GCP,
        "2026-12-03",
        _CT5P.format(24729.6, "Price"),
    ),
    Price(
        "ct5p-hightpu-4t",
        "europe-west4",
        "on-demand",
        "hour",
        17.01,
        SKYPILOT_GCP,
        "2026-12-03",
        _CT5P.format(25038.72, "Price"),
    ),
    Price(
        "ct5p-hightpu-4t",
        "us-central1",
        "spot",
        "hour",
        3.3428,
        SKYPILOT_GCP,
        "2026-12-03",
        _CT5P.format(4920.60749, "SpotPrice"),
    ),
    Price(
        "ct5p-hightpu-4t",
        "europe-west4",
        "spot",
        "hour",
        5.39396,
        SKYPILOT_GCP,
        "2026-12-03",
        _CT5P.format(7939.90912, "SpotPrice"),
    ),
    Price("ct6e-standard-8t", "us-central1", "on-demand", "hour", 21.6, SKYPILOT_GCP, "2026-12-03", "row tpu-v6e-8"),
    Price("ct6e-standard-8t", "europe-west4", "on-demand", "hour", 23.76, SKYPILOT_GCP, "2026-12-03", "row tpu-v6e-8"),
    Price(
        "ct6e-standard-8t",
        "us-central1",
        "spot",
        "hour",
        4.35366,
        SKYPILOT_GCP,
        "2026-12-03",
        "row tpu-v6e-8, its SpotPrice column",
    ),
    Price(
        "ct6e-standard-8t",
        "europe-west4",
        "spot",
        "hour",
        8.29981,
        SKYPILOT_GCP,
        "2026-12-03",
        "row tpu-v6e-8, its SpotPrice column",
    ),
    Price(
        "tpu7x-standard-4t",
        "us-central1",
        "on-demand",
        "hour",
        48.0,
        VERTEX_SECONDARY,
        "2026-07-22",
        "4 chips x (Vertex's tpu7x 13.80 per chip-hour / 1.15, Vertex's own mark-up on Cloud TPU: its v6e 3.105"
        " = 1.15 x 2.70 and its v5e 1.38 = 1.15 x 1.20)",
    ),
    Price(
        "e2-standard-8", "us-central1", "on-demand", "hour", 0.26805, SKYPILOT_GCP, "2026-12-03", "row e2-standard-8"
    ),
    Price(
        "e2-standard-8", "europe-west4", "on-demand", "hour", 0.29509, SKYPILOT_GCP, "2026-12-03", "row e2-standard-8"
    ),
    Price("e2-standard-8", "us-central1", "spot", "hour", 0.16085, CLOUD_BILLING, "2026-07-30", "its hour_spot"),
    Price("e2-standard-8", "europe-west4", "spot", "hour", 0.14106, CLOUD_BILLING, "2026-07-30", "its hour_spot"),
    Price("e2-standard-8", "us-central1", "committed", "hour", 0.16887, CLOUD_BILLING, "2026-07-30", _BILLING_1Y),
    Price("e2-standard-8", "europe-west4", "committed", "hour", 0.18591, CLOUD_BILLING, "2026-07-30", _BILLING_1Y),
    Price("gke-cluster", "us-central1", "on-demand", "hour", 0.1, GKE_PAGE, "2026-12-03", _FEE),
    Price("gke-cluster", "europe-west4", "on-demand", "hour", 0.1, GKE_PAGE, "2026-12-03", _FEE),
    Price("p5.48xlarge", "us-east-1", "on-demand", "hour", 55.04, SKYPILOT_AWS, "2026-12-03", "row p5.48xlarge"),
    Price("p5.48xlarge", "us-west-2", "on-demand", "hour", 55.04, SKYPILOT_AWS, "2026-12-03", "row p5.48xlarge"),
    Price("m6i.2xlarge", "us-east-1", "on-demand", "hour", 0.384, SKYPILOT_AWS, "2026-12-03", _M6I),
    Price("m6i.2xlarge", "us-west-2", "on-demand", "hour", 0.384, SKYPILOT_AWS, "2026-12-03", _M6I),
    Price(
        "efs-storage",
        "us-east-1",
        "on-demand",
        "GB-month",
        0.3,
        EFS_PAGE,
        "2026-12-03",
        "EFS Standard storage (Regional)",
    ),
    Price(
        "efs-read",
        "us-east-1",
        "on-demand",
        "GB",
        0.03,
        EFS_SECONDARY,
        "2026-06-17",
        "Elastic Throughput reads per GB transferred",
    ),
    Price(
        "efs-write",
        "us-east-1",
        "on-demand",
        "GB",
        0.06,
        EFS_SECONDARY,
        "2026-06-17",
        "Elastic Throughput writes per GB transferred",
    ),
    Price("eks-cluster", "us-east-1", "on-demand", "hour", 0.1, EKS_PAGE, "2024-04-01", _EKS_FEE),
    Price("eks-cluster", "us-west-2", "on-demand", "hour", 0.1, EKS_PAGE, "2024-04-01", _EKS_FEE),
)

BY_KEY: dict[tuple[str, str, RateKind], Price] = {(p.item, p.region, p.kind): p for p in PRICES}
REGIONS: frozenset[str] = frozenset(p.region for p in PRICES)  # the regions the catalog covers
ITEMS: frozenset[str] = frozenset(p.item for p in PRICES)
UNITS: dict[str, Unit] = {p.item: p.unit for p in PRICES}
LUSTRE_TIERS = (125, 250, 500, 1000)  # Managed Lustre's throughput tiers, MB/s per TiB (storage_checks.py)


def unit_of(item: str) -> Unit:
    """What one unit of `item` is: a machine type or a cluster is priced per hour."""
    return UNITS.get(item, "GiB-month" if item.startswith("lustre-") else "hour")


def lustre_item(per_unit_storage_throughput: int) -> str:
    """Managed Lustre's price key for a throughput tier (MB/s per TiB), per GiB-month of capacity."""
    return f"lustre-{per_unit_storage_throughput}"


def csv_text() -> str:
    """The catalog as tests/fixtures/prices/prices.csv (`./run golden` writes it; the refresh check reads it)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([f.name for f in fields(Price)])
    writer.writerows(astuple(p) for p in PRICES)
    return out.getvalue()
