"""The Gateway in front of the serving stacks (a cluster stack's, `layer: cluster`): one endpoint, requests
routed by the model the body names (components/specs/gateway.py, components/specs/bbr.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from components.specs import gateway
from stacks.config import formats
from stacks.config.fields import DnsLabel, OwnNamespace, Section, check_with

# versions.GKE_GATEWAY_CLASSES and versions.EXISTING_CLUSTER_GATEWAY_CLASSES (tests/test_layers_config.py)
GatewayClass = Literal["gke-l7-regional-external-managed", "gke-l7-rilb", "kgateway", "istio"]


class GatewayConfig(Section):
    enabled: bool = False
    """a cluster stack's Gateway, one HTTPRoute per serving stack to its InferencePool; default off"""
    class_name: GatewayClass | None = None
    """the Gateway's class: on GKE one of GKE's managed classes (default gke-l7-regional-external-managed); on
    an existing cluster kgateway or istio, installed beforehand (required there: nothing says which)"""
    name: DnsLabel = gateway.DEFAULT_GATEWAY_NAME
    """the Gateway's name; default inference-gateway, GAIE's"""
    namespace: OwnNamespace = gateway.DEFAULT_GATEWAY_NAMESPACE
    """the Gateway's namespace (and body-based routing's); default llm-d-gateway"""
    body_routing: bool = True
    """the inference extension's body-based routing (BBR, chart versions.BBR_VERSION): the body's `model`
    picks the route; off: the routes match the header clients set themselves"""
    bbr_chart_file: Annotated[
        str | None, check_with(lambda v: v if v is None else formats.local_file(v, (".tgz",)))
    ] = None
    """the BBR chart packaged (.tgz) on the machine running Pulumi, used instead of pulling
    versions.BBR_CHART (air-gapped clusters, the e2e run); default: none, the chart is pulled"""
    proxy_subnet_cidr: Annotated[str, check_with(lambda v: formats.ipv4_network(v, 23))] = "10.129.0.0/23"
    """GKE: the proxy-only subnet (REGIONAL_MANAGED_PROXY) the regional load balancer's proxies use, created
    in the cluster's region; unused elsewhere in the VPC; default 10.129.0.0/23, GKE's documented example"""
