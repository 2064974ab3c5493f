"""The regions a created cluster may name, and the grammar of their zones, from the clouds' own lists.

GCP: https://cloud.google.com/compute/docs/regions-zones (the table "Available regions and zones"); a zone
is the region and one letter, `-a` to `-f` in every region listed there (us-central1 has a, b, c, f).
AWS: https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html; an Availability Zone
is the region and one letter, `a` to `f` (us-east-1 has a to f); Local and Wavelength Zones are not zones of a
VPC's subnets here. A region opened since: add it to its tuple.
"""

from __future__ import annotations

GCP_REGIONS = (
    "africa-south1",
    "asia-east1",
    "asia-east2",
    "asia-northeast1",
    "asia-northeast2",
    "asia-northeast3",
    "asia-south1",
    "asia-south2",
    "asia-southeast1",
    "asia-southeast2",
    "australia-southeast1",
    "australia-southeast2",
    "europe-central2",
    "europe-north1",
    "europe-north2",
    "europe-southwest1",
    "europe-west1",
    "europe-west2",
    "europe-west3",
    "europe-west4",
    "europe-west6",
    "europe-west8",
    "europe-west9",
    "europe-west10",
    "europe-west12",
    "me-central1",
    "me-central2",
    "me-west1",
    "northamerica-northeast1",
    "northamerica-northeast2",
    "northamerica-south1",
    "southamerica-east1",
    "southamerica-west1",
    "us-central1",
    "us-east1",
    "us-east4",
    "us-east5",
    "us-south1",
    "us-west1",
    "us-west2",
    "us-west3",
    "us-west4",
)

AWS_REGIONS = (
    "af-south-1",
    "ap-east-1",
    "ap-east-2",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-southeast-7",
    "ca-central-1",
    "ca-west-1",
    "cn-north-1",
    "cn-northwest-1",
    "eu-central-1",
    "eu-central-2",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "il-central-1",
    "me-central-1",
    "me-south-1",
    "mx-central-1",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-gov-east-1",
    "us-gov-west-1",
    "us-west-1",
    "us-west-2",
)

ZONE_LETTERS = "[a-f]"
FROM = {
    "gcp": "https://cloud.google.com/compute/docs/regions-zones",
    "aws": "https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html",
}
