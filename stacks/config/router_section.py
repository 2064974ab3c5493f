"""The llm-d router (EPP and Envoy) Helm release."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from components.catalog import labels, versions
from components.units import ByteSize, GiB
from stacks.config import formats
from stacks.config.fields import (
    HELM_RELEASE_MAX,
    Labels,
    Memory,
    Section,
    check_with,
)


class ResourceSize(Section):
    """Requests and limits of a router container; each field overridable on its own."""

    cpu: Annotated[str, check_with(formats.cpu_quantity)] = "4"
    """CPU request and limit: cores (4, 0.5) or millicores (500m); default 4, the guide's router values"""
    memory: Memory = ByteSize(8 * GiB)
    """memory request and limit (e.g. 8GiB); default 8 GiB, the guide's router values"""


class RouterConfig(Section):
    release: Annotated[str, check_with(lambda v: formats.dns_1035_label(v, HELM_RELEASE_MAX))] = Field(
        default=labels.GUIDE,
        description="Helm release name; the chart names its objects after its first"
        f" {labels.ROUTER_NAME_BASE} characters (`<release>-epp`), the InferencePool after all of it",
    )
    chart: Annotated[str, check_with(formats.oci_chart)] = versions.ROUTER_CHART
    """OCI reference of the llm-d router chart, without tag; default: llm-d-router-standalone on ghcr.io"""
    version: str = Field(default=versions.ROUTER_VERSION, pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")
    """chart version (vX.Y.Z), also the EPP and P/D sidecar image tag; default: the release the seeds tested
    (components/catalog/versions.py)"""
    gaie_version: str = Field(default=versions.GAIE_VERSION, pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")
    """Gateway API Inference Extension release whose InferencePool CRD is applied; default: the seeds' (versions.py)"""
    chart_file: Annotated[str | None, check_with(lambda v: v if v is None else formats.local_file(v, (".tgz",)))] = None
    """the router chart packaged (.tgz) on the machine running Pulumi, used instead of pulling `chart`
    (air-gapped clusters, the e2e run); default: none, the chart is pulled"""
    gaie_crds_file: Annotated[
        str | None, check_with(lambda v: v if v is None else formats.local_file(v, (".yaml", ".yml")))
    ] = None
    """the Gateway API Inference Extension CRD manifests on the machine running Pulumi, applied instead of
    the `gaie_version` release asset; default: none, the asset is downloaded"""
    epp_replicas: int = Field(default=1, ge=1, le=8)
    """endpoint picker (EPP) replicas; default 1, the chart's. Approximate routing: more run active-passive (the
    chart's leader election); precise: active-active, each indexing every pod's events (llm-d's guide runs 2)"""
    prefix_routing: Literal["approximate", "precise"] = "approximate"
    """approximate: the router's own LRU indexes of the prefixes it routed (HBM, and the CPU tier at a capacity
    derived from its size); precise: every engine publishes its KV-cache events, the router indexes what each pod
    holds on every tier (llm-d's precise-prefix-cache-routing guide: a tokenizer sidecar, the event port open to
    the router only); refused for a connector whose engine leaves a tier unreported"""
    match_labels: Labels | None = Field(
        default=None,
        min_length=1,
        description="labels the router selects model servers by; default: derived from the pods",
    )
    epp_resources: ResourceSize = ResourceSize()
    """the EPP container's CPU and memory; default 4 CPU, 8 GiB (the guide's values)"""
    proxy_resources: ResourceSize = ResourceSize()
    """the Envoy proxy container's CPU and memory; default 4 CPU, 8 GiB (the guide's values)"""
