"""Body-based routing (BBR, the inference extension's ext_proc server) in front of the Gateway: its chart's
values, the post-render hardening of its Deployment, and the NetworkPolicy that admits only the Gateway's
data plane. See `components/specs/gateway.py` for what runs where.

Hardening: the BBR chart at v1.5.0 renders no securityContext and no resources (its `templates/bbr.yaml` reads
neither from values), so `bbr_values` sets what the chart reads and `harden_bbr_object` hardens its
Deployment like the program's own pods (as `security.harden_chart_object` does for the router chart).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from components.catalog import labels, versions
from components.manifest import Manifest, NetworkPolicy, plain
from components.specs import security
from components.specs.gateway import (
    DEFAULT_GATEWAY_NAME,
    GATEWAY_NAME_LABEL,
    MODEL_HEADER,
    BbrProvider,
    GatewayClassChoice,
)

# BBR (GAIE v1.5.0: `pkg/bbr/plugins/bodyfieldtoheader`, `pkg/bbr/server/options.go`, the chart's values).
BBR_NAME = "body-based-router"  # `bbr.name`: the Deployment, the Service and the pods' `app` label
BBR_EXT_PROC_PORT = 9004  # `bbr.port` (DefaultGrpcPort): the ext_proc gRPC server the gateway calls
BBR_HEALTH_PORT = 9005  # `bbr.healthCheckPort` (DefaultGrpcHealthPort): GKE's HealthCheckPolicy probes it
BBR_CONTAINER = "bbr"
BBR_CPU_REQUEST = "100m"
BBR_MEMORY_REQUEST = "128Mi"
BBR_MEMORY_LIMIT = "256Mi"
# Google's health checkers (cloud.google.com/load-balancing/docs/health-check-concepts#ip-ranges).
GCP_HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")


# Body-based routing -------------------------------------------------------------------------------------------


def _image_values(image: str) -> Manifest:
    """An image as the chart splits it (`<registry>/<repository>:<tag>`)."""
    name, _, tag = image.rpartition(":")
    registry, _, repository = name.partition("/")
    return {"registry": registry, "repository": repository, "tag": tag}


def bbr_values(
    mirror: Callable[[str], str] | None = None,
    provider: BbrProvider = "gke",
    gateway_name: str = DEFAULT_GATEWAY_NAME,
    version: str = versions.BBR_VERSION,
) -> Manifest:
    """Values for the BBR chart (`versions.BBR_CHART` at `version`), installed in the Gateway's namespace.

    The image is pinned to `version` (the chart's default tag is its own release, pulled Always), pulled
    IfNotPresent and sent through `mirror` (the plan's `Mirror.image`). The one plugin copies the body's `model`
    into `X-Gateway-Model-Name` (the chart's default also runs `base-model-to-header`, which sets
    `X-Gateway-Base-Model-Name` only for models registered in its LoRA ConfigMaps, and empty otherwise; the
    routes match the model's own name, so it is left out). Single-namespace mode (a Role, not a ClusterRole).
    The chart reads no securityContext or resources: `harden_bbr_object` sets them on the rendered Deployment.
    No boolean flags: at v1.5.0 the chart renders `--flag "value"` as two arguments, which a Go bool flag
    would not read as its value.
    """
    to = mirror or (lambda image: image)
    return {
        "bbr": {
            "name": BBR_NAME,
            "replicas": 1,
            "image": {**_image_values(to(versions.bbr_image(version))), "pullPolicy": "IfNotPresent"},
            "port": BBR_EXT_PROC_PORT,
            "healthCheckPort": BBR_HEALTH_PORT,
            "multiNamespace": False,
            "plugins": [
                {
                    "type": "body-field-to-header",
                    "name": "model-extractor",
                    "json": {"fieldName": "model", "headerName": MODEL_HEADER},
                }
            ],
            "tracing": {"enabled": False},
        },
        "provider": {"name": provider},
        "inferenceGateway": {"name": gateway_name},
    }


def bbr_container_context() -> Manifest:
    """The BBR container's securityContext: security.py's for a container without exemptions, and a read-only
    root filesystem (BBR writes nothing: its self-signed serving certificate stays in memory)."""
    hardened = security.container_context(security.Subject({}, {}, {"name": BBR_CONTAINER}))
    return {**hardened, "readOnlyRootFilesystem": True}


def bbr_resources() -> Manifest:
    return {
        "requests": {"cpu": BBR_CPU_REQUEST, "memory": BBR_MEMORY_REQUEST},
        "limits": {"memory": BBR_MEMORY_LIMIT},
    }


def harden_bbr_object(manifest: Manifest) -> Manifest:
    """A BBR chart object as the program declares it: its Deployment's containers hardened, given requests
    and a memory limit, its pod run non-root under RuntimeDefault seccomp; it keeps its service-account token
    (BBR's controller manager reads ConfigMaps). Every other object is returned unchanged."""
    if manifest.get("kind") != "Deployment":
        return manifest
    out = copy.deepcopy(manifest)
    pod = out["spec"]["template"].setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for container in pod.get(key) or []:
            container["securityContext"] = bbr_container_context()
            container["resources"] = bbr_resources()
    pod["securityContext"] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    pod["automountServiceAccountToken"] = True
    return out


@dataclass(frozen=True)
class DataPlane:
    """Who calls BBR's ext_proc: the Gateway's own proxy pods (in-cluster controllers), or the load balancer's
    proxies from outside the pods (GKE: the region's proxy-only subnet)."""

    gateway_name: str
    cidrs: tuple[str, ...] = ()

    def peers(self) -> list[Manifest]:
        if self.cidrs:
            return [{"ipBlock": {"cidr": c}} for c in self.cidrs]
        return [{"podSelector": {"matchLabels": {GATEWAY_NAME_LABEL: self.gateway_name}}}]


def data_plane_for(choice: GatewayClassChoice, gateway_name: str, proxy_cidrs: Sequence[str] = ()) -> DataPlane:
    """The data plane of a Gateway of this class: GKE's needs the proxy-only subnet's range(s)."""
    if not choice.data_plane_in_cluster:
        if not proxy_cidrs:
            raise ValueError(f"{choice.name}: BBR's NetworkPolicy needs the region's proxy-only subnet range")
        return DataPlane(gateway_name, tuple(proxy_cidrs))
    return DataPlane(gateway_name)


def bbr_network_policy(namespace: str, data_plane: DataPlane) -> Manifest:
    """Only the Gateway's data plane reaches BBR's ext_proc port (9004), in the Gateway's namespace; behind a
    GKE load balancer, Google's health checkers reach its gRPC health port (9005, the chart's HealthCheckPolicy).
    Nothing else reaches the BBR pods (its metrics port is not scraped here)."""
    ingress: list[Manifest] = [
        {"from": data_plane.peers(), "ports": [{"protocol": "TCP", "port": BBR_EXT_PROC_PORT}]},
    ]
    if data_plane.cidrs:
        ingress.append(
            {
                "from": [{"ipBlock": {"cidr": c}} for c in GCP_HEALTH_CHECK_RANGES],
                "ports": [{"protocol": "TCP", "port": BBR_HEALTH_PORT}],
            }
        )
    record: NetworkPolicy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": f"{BBR_NAME}-ingress",
            "namespace": namespace,
            "labels": {labels.GUIDE_LABEL: labels.GUIDE},
        },
        "spec": {"podSelector": {"matchLabels": {"app": BBR_NAME}}, "policyTypes": ["Ingress"], "ingress": ingress},
    }
    return plain(record)
