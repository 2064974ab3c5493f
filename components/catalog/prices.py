"""On-demand prices of what the stacks create, each with its source and the date it was read: the machine types
and TPU slices of the node pools (`machines.py`), the clusters' management fees, EFS storage and its elastic
throughput. A copy of tests/fixtures/prices/prices.csv (tests/test_prices.py holds every row equal to it; the
fixture's SOURCE.md says where each figure comes from and how to refresh it). `pricing.prices` overrides any of
them (committed-use and negotiated rates). A price not here is not guessed: the plan names it unpriced.
"""

from __future__ import annotations

from dataclasses import dataclass

# The billing month the GCP and AWS price pages convert hourly prices with.
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class Price:
    item: str  # a machine type, `gke-cluster`, `eks-cluster`, `efs-storage`, `efs-read`, `efs-write`, `efs-provisioned`
    region: str
    unit: str  # USD per: hour | GB-month | GB (decimal GB, as the price pages write them) | MiB/s-month
    usd: float
    source: str  # where the figure was read (`skypilot-catalog/<cloud>@<commit>`, a price page, or `secondary: ...`)
    as_of: str  # when it was read (ISO date)
    how: str  # the rows it was computed from, where it is not one row


PRICES: tuple[Price, ...] = (
    Price(
        "a3-highgpu-8g",
        "us-central1",
        "hour",
        43.06615,
        "skypilot-catalog/gcp@006059e0",
        "2026-12-03",
        "VM row a3-highgpu-8g 9.46006 + GPU row H100 x8 33.60609",
    ),
    Price(
        "a3-highgpu-8g",
        "europe-west4",
        "hour",
        111.81719,
        "skypilot-catalog/gcp@006059e0",
        "2026-12-03",
        "VM row a3-highgpu-8g 9.93306 + GPU row H100 x8 101.88413",
    ),
    Price(
        "ct5p-hightpu-4t",
        "us-central1",
        "hour",
        16.8,
        "skypilot-catalog/gcp@006059e0",
        "2026-12-03",
        "row tpu-v5p-11776 24729.6 / 11776 cores x 8 cores (4 chips x 2 TensorCores)",
    ),
    Price(
        "ct5p-hightpu-4t",
        "europe-west4",
        "hour",
        17.01,
        "skypilot-catalog/gcp@006059e0",
        "2026-12-03",
        "row tpu-v5p-11776 25038.72 / 11776 cores x 8 cores (4 chips x 2 TensorCores)",
    ),
    Price(
        "ct6e-standard-8t",
        "us-central1",
        "hour",
        21.6,
        "skypilot-catalog/gcp@006059e0",
        "2026-12-03",
        "row tpu-v6e-8 (8 chips)",
    ),
    Price(
        "ct6e-standard-8t",
        "europe-west4",
        "hour",
        23.76,
        "skypilot-catalog/gcp@006059e0",
        "2026-12-03",
        "row tpu-v6e-8 (8 chips)",
    ),
    Price(
        "e2-standard-8",
        "us-central1",
        "hour",
        0.26805,
        "skypilot-catalog/gcp@006059e0",
        "2026-12-03",
        "row e2-standard-8",
    ),
    Price(
        "e2-standard-8",
        "europe-west4",
        "hour",
        0.29509,
        "skypilot-catalog/gcp@006059e0",
        "2026-12-03",
        "row e2-standard-8",
    ),
    Price(
        "gke-cluster",
        "us-central1",
        "hour",
        0.1,
        "cloud.google.com/kubernetes-engine/pricing",
        "2026-12-03",
        "cluster management fee per cluster (the free tier's one zonal cluster not counted)",
    ),
    Price(
        "gke-cluster",
        "europe-west4",
        "hour",
        0.1,
        "cloud.google.com/kubernetes-engine/pricing",
        "2026-12-03",
        "cluster management fee per cluster (the free tier's one zonal cluster not counted)",
    ),
    Price("p5.48xlarge", "us-east-1", "hour", 55.04, "skypilot-catalog/aws@00148f2a", "2026-12-03", "row p5.48xlarge"),
    Price("p5.48xlarge", "us-west-2", "hour", 55.04, "skypilot-catalog/aws@00148f2a", "2026-12-03", "row p5.48xlarge"),
    Price(
        "m6i.2xlarge",
        "us-east-1",
        "hour",
        0.384,
        "skypilot-catalog/aws@00148f2a",
        "2026-12-03",
        "2 x row m6i.xlarge 0.192 (m6i prices scale with vCPUs: row m6i.metal 6.144 = 32 x 0.192)",
    ),
    Price(
        "m6i.2xlarge",
        "us-west-2",
        "hour",
        0.384,
        "skypilot-catalog/aws@00148f2a",
        "2026-12-03",
        "2 x row m6i.xlarge 0.192 (m6i prices scale with vCPUs: row m6i.metal 6.144 = 32 x 0.192)",
    ),
    Price(
        "efs-storage",
        "us-east-1",
        "GB-month",
        0.3,
        "aws.amazon.com/efs/pricing",
        "2026-12-03",
        "EFS Standard storage (Regional)",
    ),
    Price(
        "efs-read",
        "us-east-1",
        "GB",
        0.03,
        "secondary: factualminds.com EFS pricing post, June 2026 (us-east-1)",
        "2026-06-17",
        "Elastic Throughput reads per GB transferred",
    ),
    Price(
        "efs-write",
        "us-east-1",
        "GB",
        0.06,
        "secondary: factualminds.com EFS pricing post, June 2026 (us-east-1)",
        "2026-06-17",
        "Elastic Throughput writes per GB transferred",
    ),
    Price(
        "efs-provisioned",
        "us-east-1",
        "MiB/s-month",
        6.0,
        "secondary: emnode.com EFS throughput lesson (us-east-1)",
        "2026-12-04",
        "Provisioned Throughput per MiB/s provisioned per month (AWS's page writes MB/s-month for the MiB/s it sets)",
    ),
    Price(
        "eks-cluster",
        "us-east-1",
        "hour",
        0.1,
        "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing",
        "2024-04-01",
        "control plane per cluster on a version in standard support",
    ),
    Price(
        "eks-cluster",
        "us-west-2",
        "hour",
        0.1,
        "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing",
        "2024-04-01",
        "control plane per cluster on a version in standard support",
    ),
)

BY_KEY: dict[tuple[str, str], Price] = {(p.item, p.region): p for p in PRICES}
REGIONS: frozenset[str] = frozenset(p.region for p in PRICES)  # the regions the catalog covers
UNITS: dict[str, str] = {
    "gke-cluster": "hour",
    "eks-cluster": "hour",
    "efs-storage": "GB-month",
    "efs-read": "GB",
    "efs-write": "GB",
    "efs-provisioned": "MiB/s-month",
}


def unit_of(item: str) -> str:
    """What one unit of `item` is: a machine type or a cluster is priced per hour."""
    return UNITS.get(item, "GiB-month" if item.startswith("lustre-") else "hour")


def lustre_item(per_unit_storage_throughput: int) -> str:
    """Managed Lustre's price key for a throughput tier (MB/s per TiB), per GiB-month of capacity."""
    return f"lustre-{per_unit_storage_throughput}"
