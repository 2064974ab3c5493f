"""One Gateway in front of several serving stacks, requests routed by the model named in the body.

What runs where:
- The **Gateway** (`gateway.networking.k8s.io/v1`, standard channel `versions.GATEWAY_API_VERSION`) lives in its
  own namespace (the cluster layer's); its class comes from the platform (`gateway_class_for`): GKE's managed
  regional Application Load Balancers, or on an existing cluster kgateway or Istio, installed beforehand.
- **Body-based routing** (BBR, the inference extension's ext_proc server; chart `versions.BBR_CHART` at
  `versions.BBR_VERSION`) is installed once per Gateway, in the Gateway's namespace (the chart's
  GCPRoutingExtension / EnvoyFilter target the Gateway by name in the release's namespace). It reads the
  request body's `model` and sets it as the header `X-Gateway-Model-Name` before the gateway picks a route.
- Each **serving stack** has, in its own namespace, an **HTTPRoute** attached to the Gateway whose rules match
  that header, one rule per model it serves, each to the stack's InferencePool (the router release's).

Across namespaces (Gateway API v1.3.0, the HTTPRoute and ReferenceGrant CRDs' own text, GEP-709): a route's
`parentRefs` may name a Gateway in another namespace without any ReferenceGrant; the Gateway's listener
admits it through `allowedRoutes.namespaces` (here `Selector` on the serving namespaces, or `All`). A
`backendRefs` entry in another namespace than the route's is refused ("RefNotPermitted") unless a
ReferenceGrant in the backend's namespace allows the route's namespace and kind. With the route in the serving
stack's namespace, the backendRef to its InferencePool is same-namespace and needs no ReferenceGrant: the one
namespace boundary is crossed by the parentRef (routes kept beside the Gateway would each need a grant; the
program never builds them).

BBR itself (its values, hardening and NetworkPolicy): `components/specs/bbr.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from components.catalog import labels, versions
from components.catalog.platforms import PLATFORMS
from components.manifest import Manifest
from components.specs import network
from components.specs.workload_type import WorkloadType

API_GROUP = "gateway.networking.k8s.io"
API_VERSION = f"{API_GROUP}/v1"
POOL_GROUP, POOL_KIND = "inference.networking.k8s.io", "InferencePool"

DEFAULT_GATEWAY_NAME = "inference-gateway"  # the chart's `inferenceGateway.name` default and GAIE's manifests
DEFAULT_GATEWAY_NAMESPACE = "llm-d-gateway"
HTTP_PORT = 80
# GKE's managed load balancers set their own timeouts (GAIE's inferencepool chart sets none there); Envoy-based
# controllers default to 15 s per route, too short for a completion: GAIE's chart default.
ROUTE_REQUEST_TIMEOUT = "300s"
# Gateway API v1.3.0 HTTPRoute limits (`spec.rules` maxItems, `spec.rules[].matches` maxItems).
MAX_RULES = 16

# GEP-1762 (in-cluster gateway deployments): the controller labels the data plane it runs for a Gateway so.
GATEWAY_NAME_LABEL = f"{API_GROUP}/gateway-name"

# The headers BBR sets (GAIE v1.5.0 `pkg/bbr/plugins`): the routes match the first.
MODEL_HEADER = "X-Gateway-Model-Name"  # bodyfieldtoheader.ModelHeader: the body's `model`, verbatim

BbrProvider = Literal["gke", "istio", "none"]

# The serving stack's HTTPRoute, declared after its router (whose chart creates the InferencePool it targets).
ROUTE_WORKLOAD = WorkloadType("llmd:gateway:ModelRoute", "gateway-route")


# Gateway classes ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GatewayClassChoice:
    """The Gateway's class, what must exist before it, and how BBR attaches to its data plane."""

    name: str
    managed: bool  # the platform provides the controller (GKE); else it is a prerequisite the user installs
    bbr_provider: BbrProvider  # the BBR chart's `provider.name`: which attachment object the chart renders
    prerequisite: str  # one line for the summary and the error messages
    route_timeouts: bool  # whether HTTPRoute `timeouts` are set (GKE's classes: no)
    data_plane_in_cluster: bool  # False: the load balancer's proxies sit outside the pods (GKE's proxy-only subnet)


def _choice(name: str) -> GatewayClassChoice:
    if name in versions.GKE_GATEWAY_CLASSES:
        return GatewayClassChoice(
            name,
            managed=True,
            bbr_provider="gke",
            prerequisite=(
                f"GKE's Gateway controller (gateway_api_config CHANNEL_STANDARD) and a proxy-only subnet"
                f" (purpose REGIONAL_MANAGED_PROXY) in the cluster's region for {name}"
            ),
            route_timeouts=False,
            data_plane_in_cluster=False,
        )
    if name == "istio":
        return GatewayClassChoice(
            name,
            managed=False,
            bbr_provider="istio",
            prerequisite="Istio with its Gateway API support and the inference extension enabled"
            " (PILOT_ENABLE_GATEWAY_API_INFERENCE_EXTENSION), installed before this stack",
            route_timeouts=True,
            data_plane_in_cluster=True,
        )
    if name == "kgateway":
        return GatewayClassChoice(
            name,
            managed=False,
            bbr_provider="none",
            prerequisite="kgateway with its inference extension enabled, installed before this stack; the BBR"
            " chart renders no kgateway attachment (provider none): kgateway must call BBR's ext_proc itself",
            route_timeouts=True,
            data_plane_in_cluster=True,
        )
    raise ValueError(f"unknown gateway class {name!r}")


def gateway_class_for(platform: str, override: str | None = None) -> GatewayClassChoice:
    """The Gateway's class on a platform (`cluster.effective_platform`): GKE's managed class
    (`versions.GKE_DEFAULT_GATEWAY_CLASS` unless `override` names the other GKE class); anywhere else the
    configured controller, kgateway or Istio, which must be named: nothing on an existing cluster says which
    controller its operators installed."""
    if PLATFORMS[platform].managed_gateway:
        name = override or versions.GKE_DEFAULT_GATEWAY_CLASS
        if name not in versions.GKE_GATEWAY_CLASSES:
            raise ValueError(
                f"on GKE the gateway class is one of {', '.join(versions.GKE_GATEWAY_CLASSES)}, not {name!r}"
            )
        return _choice(name)
    if override is None:
        raise ValueError(
            f"a cluster on platform {platform!r} needs its Gateway controller named:"
            f" one of {', '.join(versions.EXISTING_CLUSTER_GATEWAY_CLASSES)}"
        )
    if override not in versions.EXISTING_CLUSTER_GATEWAY_CLASSES:
        raise ValueError(
            f"on platform {platform!r} the gateway class is one of"
            f" {', '.join(versions.EXISTING_CLUSTER_GATEWAY_CLASSES)}, not {override!r}"
        )
    return _choice(override)


# The Gateway --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listener:
    name: str = "http"
    port: int = HTTP_PORT
    protocol: Literal["HTTP"] = "HTTP"


@dataclass(frozen=True)
class GatewayRef:
    """The Gateway a route attaches to (and its listener's section name, None: every listener)."""

    name: str = DEFAULT_GATEWAY_NAME
    namespace: str = DEFAULT_GATEWAY_NAMESPACE
    section: str | None = None

    def parent_ref(self) -> Manifest:
        out: Manifest = {"group": API_GROUP, "kind": "Gateway", "name": self.name, "namespace": self.namespace}
        if self.section:
            out["sectionName"] = self.section
        return out


def allowed_routes(route_namespaces: Sequence[str] | None, namespace_label: tuple[str, str] | None = None) -> Manifest:
    """Which namespaces' HTTPRoutes a listener admits: those carrying `namespace_label` (a cluster stack's
    Gateway: a new serving stack labels its namespace and the Gateway never changes), the named ones (by the
    API server's own namespace label), or every namespace when both are None."""
    kinds = [{"group": API_GROUP, "kind": "HTTPRoute"}]
    if namespace_label is not None:
        key, value = namespace_label
        return {"namespaces": {"from": "Selector", "selector": {"matchLabels": {key: value}}}, "kinds": kinds}
    if route_namespaces is None:
        return {"namespaces": {"from": "All"}, "kinds": kinds}
    if not route_namespaces:
        raise ValueError("a Gateway that admits routes from named namespaces needs at least one")
    selector = {
        "matchExpressions": [
            {"key": network.NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(set(route_namespaces))}
        ]
    }
    return {"namespaces": {"from": "Selector", "selector": selector}, "kinds": kinds}


def gateway(
    name: str,
    namespace: str,
    gateway_class: str,
    listeners: Sequence[Listener] = (Listener(),),
    route_namespaces: Sequence[str] | None = None,
    namespace_label: tuple[str, str] | None = None,
) -> Manifest:
    """The Gateway: one HTTP listener on port 80 by default, admitting HTTPRoutes from the namespaces labelled
    `namespace_label`, or from `route_namespaces` (the serving stacks' namespaces), or from every namespace."""
    if not listeners:
        raise ValueError("a Gateway needs at least one listener")
    if len({listener.name for listener in listeners}) != len(listeners):
        raise ValueError("listener names must be unique")
    return {
        "apiVersion": API_VERSION,
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": namespace, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
        "spec": {
            "gatewayClassName": gateway_class,
            "listeners": [
                {
                    "name": ln.name,
                    "port": ln.port,
                    "protocol": ln.protocol,
                    "allowedRoutes": allowed_routes(route_namespaces, namespace_label),
                }
                for ln in listeners
            ],
        },
    }


# Routes -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServingRoute:
    """What the Gateway needs of one serving stack: its name, namespace, the model names its servers answer
    to (the body's `model`: `--served-model-name`, else the model id) and its InferencePool (the router
    release's name), with the pool's port when an implementation needs one (None: omitted, as upstream does;
    the pool's `targetPorts` name the servers' port)."""

    stack: str
    namespace: str
    models: tuple[str, ...]
    pool: str
    port: int | None = None

    def __post_init__(self) -> None:
        if not self.models:
            raise ValueError(f"serving stack {self.stack} names no model to route")
        if len(set(self.models)) != len(self.models):
            raise ValueError(f"serving stack {self.stack} names a model twice")
        if len(self.models) > MAX_RULES:
            raise ValueError(f"serving stack {self.stack}: at most {MAX_RULES} models per HTTPRoute (one rule each)")


def route_name(serving: ServingRoute) -> str:
    return serving.stack


def pool_backend_ref(serving: ServingRoute) -> Manifest:
    """The stack's InferencePool, in the route's own namespace."""
    out: Manifest = {"group": POOL_GROUP, "kind": POOL_KIND, "name": serving.pool}
    if serving.port is not None:
        out["port"] = serving.port
    return out


def model_match(model: str) -> Manifest:
    """The match for requests whose body names `model` (the header BBR sets from it)."""
    return {
        "path": {"type": "PathPrefix", "value": "/"},
        "headers": [{"type": "Exact", "name": MODEL_HEADER, "value": model}],
    }


def http_route(
    serving: ServingRoute,
    parent: GatewayRef = GatewayRef(),
    request_timeout: str | None = ROUTE_REQUEST_TIMEOUT,
) -> Manifest:
    """The serving stack's HTTPRoute: in its own namespace, attached to the Gateway, one rule per model matching
    `X-Gateway-Model-Name` exactly, each to the stack's InferencePool.
    `request_timeout` None: no `timeouts` (GKE's classes, `GatewayClassChoice.route_timeouts`)."""
    rules: list[Manifest] = []
    for model in serving.models:
        rule: Manifest = {"matches": [model_match(model)], "backendRefs": [pool_backend_ref(serving)]}
        if request_timeout is not None:
            rule["timeouts"] = {"request": request_timeout}
        rules.append(rule)
    return {
        "apiVersion": API_VERSION,
        "kind": "HTTPRoute",
        "metadata": {
            "name": route_name(serving),
            "namespace": serving.namespace,
            "labels": {labels.GUIDE_LABEL: labels.GUIDE},
        },
        "spec": {"parentRefs": [parent.parent_ref()], "rules": rules},
    }
