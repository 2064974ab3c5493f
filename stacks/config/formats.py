"""What the platform accepts as a name, label, image reference, CIDR or zone: checks for config fields.

Each check returns the value or raises ValueError with what is allowed (pydantic turns it into the
one-line config error). Sources: Kubernetes' validation (DNS-1123/1035 names, label keys and values),
the OCI distribution reference grammar, GKE's and EKS's resource naming rules.
"""

from __future__ import annotations

import ipaddress
import re

from components.catalog import regions

_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
# Kubernetes' IsDNS1123Subdomain: labels of any length joined by '.', 253 characters in all (a ClusterRole
# named "<release>-<chart>-epp" may run past 63 and the API server takes it).
_SUBDOMAIN_PART = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = rf"(?=.{{1,253}}\Z){_SUBDOMAIN_PART}(\.{_SUBDOMAIN_PART})*"

# The OCI distribution reference grammar (github.com/distribution/reference, regexp.go).
_HOST_PART = r"([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_DOMAIN = rf"(localhost|{_HOST_PART}(\.{_HOST_PART})+|{_HOST_PART}(\.{_HOST_PART})*:[0-9]+)"
_PATH_PART = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(
    rf"(?P<name>({_DOMAIN}/)?{_PATH_PART}(/{_PATH_PART})*)"
    r"(:(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(@(?P<digest>sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128}))?",
    re.ASCII,
)


def _full(pattern: str, value: str) -> bool:
    """The whole value, ASCII only: the platforms' grammars mean [0-9] by a digit and take no trailing newline
    (Python's `\\d`, `\\w` and `$` would accept Unicode digits and a final newline)."""
    return re.fullmatch(pattern, value, re.ASCII) is not None


def dns_label(value: str) -> str:
    if not _full(_DNS_LABEL, value):
        raise ValueError("must be a DNS label: lower-case letters, digits and '-', at most 63 characters")
    return value


# Namespaces every cluster (or its platform) already has: a stack creates the namespaces it names and deletes them
# on `pulumi destroy`, with everything in them.
RESERVED_NAMESPACES = ("default", "gmp-system", "gmp-public")
RESERVED_NAMESPACE_PREFIXES = ("kube-", "gke-", "openshift")


def is_reserved_namespace(value: str) -> bool:
    return value in RESERVED_NAMESPACES or value.startswith(RESERVED_NAMESPACE_PREFIXES)


def own_namespace(value: str) -> str:
    """A namespace a stack creates (and deletes with it): a DNS label the cluster or its platform does not own."""
    dns_label(value)
    if is_reserved_namespace(value):
        raise ValueError(
            "a namespace the cluster or its platform owns (default, gmp-*, kube-*, gke-*, openshift*); the stack"
            " creates its own and deletes it with the stack: pick another"
        )
    return value


def dns_1035_label(value: str, max_length: int = 63) -> str:
    """A name that starts with a letter (Services, GKE and Helm names)."""
    if len(value) > max_length or not _full(r"[a-z]([-a-z0-9]*[a-z0-9])?", value):
        raise ValueError(
            f"must start with a letter, then lower-case letters, digits and '-', at most {max_length} characters"
        )
    return value


def dns_subdomain(value: str) -> str:
    if not _full(_DNS_SUBDOMAIN, value):
        raise ValueError(
            "must be a DNS subdomain: lower-case letters, digits and '-' in parts joined by '.', at most 253 characters"
        )
    return value


def label_key(value: str) -> str:
    prefix, _, name = value.rpartition("/")
    if (prefix and not _full(_DNS_SUBDOMAIN, prefix)) or not _full(_LABEL_NAME, name) or ("/" in value and not prefix):
        raise ValueError(
            "must be a Kubernetes label key: an optional DNS-subdomain prefix and '/', then at most 63"
            " letters, digits, '-', '_' or '.' beginning and ending with a letter or digit"
        )
    return value


def label_value(value: str) -> str:
    if value and not _full(_LABEL_NAME, value):
        raise ValueError(
            "must be a Kubernetes label value: empty, or at most 63 letters, digits, '-', '_' or '.'"
            " beginning and ending with a letter or digit"
        )
    return value


def labels(value: dict[str, str]) -> dict[str, str]:
    for key, text in value.items():
        label_key(key)
        label_value(text)
    return value


def image_reference(value: str) -> str:
    match = _IMAGE.fullmatch(value)
    if match is None or len(match.group("name")) > 255:
        raise ValueError(
            "must be an image reference: [registry/]lower-case/path[:tag][@sha256:<64 hex digits>],"
            " e.g. docker.io/vllm/vllm-openai:v0.26.0"
        )
    return value


def oci_chart(value: str) -> str:
    """A chart in an OCI registry, without a tag (the version is a field of its own)."""
    match = _IMAGE.fullmatch(value.removeprefix("oci://"))
    if not value.startswith("oci://") or match is None or match["tag"] or match["digest"] or "/" not in match["name"]:
        raise ValueError("must be a chart in an OCI registry, oci://registry/path, without a tag")
    return value


def registry_host(value: str) -> str:
    """An image registry's host (docker.io, us-docker.pkg.dev, localhost:5000): the OCI reference's domain."""
    if not _full(_DOMAIN, value) or len(value) > 253:
        raise ValueError("must be a registry host, e.g. docker.io or registry.k8s.io")
    return value


def ecr_credential_arn(registry: str, arn: str) -> str:
    """The Secrets Manager secret an ECR pull-through cache rule reads `registry`'s credential from."""
    if not _full(
        r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:ecr-pullthroughcache/[A-Za-z0-9/_+=.@-]+", arn
    ):
        raise ValueError(
            f"{registry}: must be a Secrets Manager secret ARN named ecr-pullthroughcache/..., e.g."
            " arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/docker-hub-AbCdEf"
        )
    return arn


def ipv4_network(value: str, prefix: int) -> str:
    try:
        network = ipaddress.IPv4Network(value)
    except ValueError:
        raise ValueError(f"must be an IPv4 network a.b.c.d/{prefix} with its host bits zero") from None
    if network.prefixlen != prefix or not network.is_private:
        raise ValueError(f"must be a private IPv4 network of prefix length /{prefix}, e.g. 10.0.0.0/{prefix}")
    return value


GCP_REGION = r"[a-z]+-[a-z]+[0-9]{1,2}"
AWS_REGION = r"[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+"


def gcp_region(value: str) -> str:
    if not _full(GCP_REGION, value):
        raise ValueError("must be a GCP region, e.g. us-central1")
    if value not in regions.GCP_REGIONS:
        raise ValueError(f"no such GCP region (components/catalog/regions.py, from {regions.FROM['gcp']})")
    return value


def aws_region(value: str) -> str:
    if not _full(AWS_REGION, value):
        raise ValueError("must be an AWS region, e.g. us-east-1")
    if value not in regions.AWS_REGIONS:
        raise ValueError(f"no such AWS region (components/catalog/regions.py, from {regions.FROM['aws']})")
    return value


def gcp_project(value: str) -> str:
    """6 to 30 characters, a letter first, not ending in '-' (optionally `domain:` scoped)."""
    if not _full(_GCP_PROJECT, value):
        raise ValueError("must be a GCP project id: 6 to 30 lower-case letters, digits or '-', starting with a letter")
    return value


_GCE_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"  # a Compute Engine resource name (RFC 1035 label)
_GCP_PROJECT = r"([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]"


def gcp_network(value: str) -> str:
    if not _full(rf"{_GCE_NAME}|projects/{_GCP_PROJECT}/global/networks/{_GCE_NAME}", value):
        raise ValueError(
            "must be a VPC network name (a letter, then up to 62 lower-case letters, digits or '-') or"
            " projects/PROJECT/global/networks/NAME"
        )
    return value


def gcp_subnetwork(value: str) -> str:
    if not _full(rf"{_GCE_NAME}|projects/{_GCP_PROJECT}/regions/{GCP_REGION}/subnetworks/{_GCE_NAME}", value):
        raise ValueError(
            "must be a subnetwork name (a letter, then up to 62 lower-case letters, digits or '-') or"
            " projects/PROJECT/regions/REGION/subnetworks/NAME"
        )
    return value


def gke_reservation(value: str) -> str:
    if not _full(rf"{_GCE_NAME}|projects/{_GCP_PROJECT}/reservations/{_GCE_NAME}", value):
        raise ValueError("must be a GKE reservation: a Compute Engine name or projects/PROJECT/reservations/NAME")
    return value


def ec2_capacity_reservation(value: str) -> str:
    if not _full(r"cr-[0-9a-f]{17}", value):
        raise ValueError("must be an EC2 capacity reservation id: cr- and 17 hexadecimal digits")
    return value


def zone_in(zone: str, region: str, separator: str) -> bool:
    """A zone of the region: `us-central1-a` in GCP (separator '-'), `us-east-1a` in AWS ('')."""
    return _full(re.escape(region + separator) + regions.ZONE_LETTERS, zone)


_CPU = re.compile(r"(?P<number>[0-9]+(\.[0-9]+)?)(?P<milli>m?)")
MAX_CPU_CORES = 1024  # more than any node offers


def cpu_quantity(value: str) -> str:
    """A Kubernetes CPU quantity of at least 1m and at most MAX_CPU_CORES cores ("4", "0.5", "500m")."""
    match = _CPU.fullmatch(value)
    if match is None:
        raise ValueError("must be a CPU quantity: cores (4, 0.5) or millicores (500m)")
    millicores = float(match["number"]) * (1 if match["milli"] else 1000)
    if not 1 <= millicores <= MAX_CPU_CORES * 1000:
        raise ValueError(f"must be between 1m and {MAX_CPU_CORES} cores")
    return value


def millicores(value: str) -> float:
    """A CPU quantity `cpu_quantity` accepted, in millicores."""
    match = _CPU.fullmatch(value)
    assert match is not None, value
    return float(match["number"]) * (1 if match["milli"] else 1000)


def local_file(value: str, suffixes: tuple[str, ...]) -> str:
    """A file on the machine running Pulumi, used instead of a download (air-gapped clusters, the e2e run)."""
    from pathlib import Path

    if not value.endswith(suffixes):
        raise ValueError(f"must be a path to a {' or '.join(suffixes)} file")
    if not Path(value).expanduser().is_file():
        raise ValueError("must be an existing file (a relative path is relative to the project directory)")
    return value


_PULUMI_NAME = r"[A-Za-z0-9_.-]{1,100}"


def pulumi_stack_reference(value: str) -> str:
    """A fully qualified stack name, as StackReference takes it (an organization, a project, a stack)."""
    if not _full(rf"{_PULUMI_NAME}/{_PULUMI_NAME}/{_PULUMI_NAME}", value):
        raise ValueError(
            "must be <organization>/<project>/<stack>, each letters, digits, '-', '_' or '.'"
            " (the local backend's organization is `organization`)"
        )
    return value


def relative_file_path(value: str, suffix: str) -> str:
    """A file inside the project: relative, no `..`, so an offline render reads only the repo's files."""
    parts = value.split("/")
    if not value.endswith(suffix) or value.startswith("/") or ".." in parts or "" in parts or "\\" in value:
        raise ValueError(f"must be a relative path to a {suffix} file inside the project (no '..', no leading '/')")
    return value


def relative_json_path(value: str) -> str:
    return relative_file_path(value, ".json")


def relative_jsonl_path(value: str) -> str:
    return relative_file_path(value, ".jsonl")
