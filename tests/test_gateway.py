"""The Gateway layer (issue #24): the Gateway and an HTTPRoute per serving stack (beside its pool: no
ReferenceGrant) against the Gateway API CRDs kept as fixtures (strict), body-based routing's header and chart
(rendered by the pinned Helm from the chart's sources at its release), its hardening and NetworkPolicy, and the
class per platform."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.catalog import versions
from components.specs import bbr
from components.specs import gateway as gw
from scripts import install_helm
from tests.helpers import SCHEMAS, UPSTREAM, validate

BBR_CHART = UPSTREAM / "charts" / "body-based-routing-v1.5.0"
GATEWAY_CRDS = SCHEMAS / "gateway-api" / "v1.3.0"

QWEN32 = gw.ServingRoute("qwen3-32b", "serving-qwen3-32b", ("Qwen/Qwen3-32B",), "tiered-prefix-cache")
QWEN8 = gw.ServingRoute("qwen3-8b", "serving-qwen3-8b", ("Qwen/Qwen3-8B", "qwen3-8b-chat"), "qwen3-8b-router")
PARENT = gw.GatewayRef("inference-gateway", "llm-d-gateway")
GKE = gw.gateway_class_for("gke")
ISTIO = gw.gateway_class_for("base", "istio")


# The fixtures ----------------------------------------------------------------------------------------------


def test_the_crd_fixtures_are_gateway_api_v1_3_0_standard_channel() -> None:
    kinds = {}
    for path in sorted(GATEWAY_CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        annotations = crd["metadata"]["annotations"]
        assert annotations["gateway.networking.k8s.io/bundle-version"] == versions.GATEWAY_API_VERSION == "v1.3.0"
        assert annotations["gateway.networking.k8s.io/channel"] == "standard"
        kinds[crd["spec"]["names"]["kind"]] = sorted(v["name"] for v in crd["spec"]["versions"] if v["served"])
    assert kinds == {
        "Gateway": ["v1", "v1beta1"],
        "GatewayClass": ["v1", "v1beta1"],
        "HTTPRoute": ["v1", "v1beta1"],
        "ReferenceGrant": ["v1beta1"],
    }


def test_validation_uses_the_crd_and_closes_unknown_fields() -> None:
    """helpers.validate reads these CRDs: a typo and a wrong enum fail, so a passing object is a checked one."""
    route = gw.http_route(QWEN32, PARENT)
    validate(route)
    typo = json.loads(json.dumps(route))
    typo["spec"]["rules"][0]["backendRef"] = typo["spec"]["rules"][0].pop("backendRefs")
    with pytest.raises(jsonschema.ValidationError):
        validate(typo)
    bad_match = json.loads(json.dumps(route))
    bad_match["spec"]["rules"][0]["matches"][0]["headers"][0]["type"] = "Prefix"
    with pytest.raises(jsonschema.ValidationError):
        validate(bad_match)
    listener = gw.gateway("g", "ns", "istio")
    listener["spec"]["listeners"][0]["port"] = 0  # below the schema's minimum of 1
    with pytest.raises(jsonschema.ValidationError):
        validate(listener)


# The Gateway -----------------------------------------------------------------------------------------------


def test_the_gateway_listens_on_http_80_for_routes_of_the_serving_namespaces() -> None:
    obj = gw.gateway("inference-gateway", "llm-d-gateway", "gke-l7-rilb", route_namespaces=["b", "a", "b"])
    validate(obj)
    assert obj["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert obj["metadata"]["namespace"] == "llm-d-gateway"
    assert obj["spec"]["gatewayClassName"] == "gke-l7-rilb"
    assert obj["spec"]["listeners"] == [
        {
            "name": "http",
            "port": 80,
            "protocol": "HTTP",
            "allowedRoutes": {
                "namespaces": {
                    "from": "Selector",
                    "selector": {
                        "matchExpressions": [
                            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}
                        ]
                    },
                },
                "kinds": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}],
            },
        }
    ]


def test_a_gateway_without_named_namespaces_admits_routes_from_all() -> None:
    obj = gw.gateway("g", "ns", "istio", listeners=[gw.Listener("web", 8080)])
    validate(obj)
    assert obj["spec"]["listeners"][0]["name"] == "web"
    assert obj["spec"]["listeners"][0]["port"] == 8080
    assert obj["spec"]["listeners"][0]["allowedRoutes"]["namespaces"] == {"from": "All"}
    with pytest.raises(ValueError, match="unique"):
        gw.gateway("g", "ns", "istio", listeners=[gw.Listener(), gw.Listener()])
    with pytest.raises(ValueError, match="at least one"):
        gw.gateway("g", "ns", "istio", route_namespaces=[])


# Routes ----------------------------------------------------------------------------------------------------


def test_each_serving_stack_gets_a_route_in_its_namespace_to_its_pool() -> None:
    route = gw.http_route(QWEN8, PARENT)
    validate(route)
    assert route["metadata"]["name"] == "qwen3-8b"
    assert route["metadata"]["namespace"] == "serving-qwen3-8b"
    assert route["spec"]["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "inference-gateway",
            "namespace": "llm-d-gateway",
        }
    ]
    pool = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "qwen3-8b-router"}
    assert [rule["backendRefs"] for rule in route["spec"]["rules"]] == [[pool], [pool]]


def test_each_model_is_matched_by_the_header_bbr_sets_from_the_body() -> None:
    route = gw.http_route(QWEN8, PARENT)
    assert [rule["matches"] for rule in route["spec"]["rules"]] == [
        [
            {
                "path": {"type": "PathPrefix", "value": "/"},
                "headers": [{"type": "Exact", "name": "X-Gateway-Model-Name", "value": "Qwen/Qwen3-8B"}],
            }
        ],
        [
            {
                "path": {"type": "PathPrefix", "value": "/"},
                "headers": [{"type": "Exact", "name": "X-Gateway-Model-Name", "value": "qwen3-8b-chat"}],
            }
        ],
    ]
    assert [rule["timeouts"] for rule in route["spec"]["rules"]] == [{"request": "300s"}] * 2


def test_the_header_is_the_one_bbr_v1_5_0_sets() -> None:
    """The constant in the BBR source and the chart's default plugin config (the fixture) agree with the spec."""
    values = yaml.safe_load((BBR_CHART / "values.yaml").read_text())
    extractor = next(p for p in values["bbr"]["plugins"] if p["type"] == "body-field-to-header")
    assert extractor["json"] == {"fieldName": "model", "headerName": "X-Gateway-Model-Name"}
    assert gw.MODEL_HEADER == "X-Gateway-Model-Name"


def test_a_pool_port_is_set_only_when_named() -> None:
    with_port = gw.ServingRoute("s", "ns", ("m",), "pool", port=8000)
    ref = gw.http_route(with_port, PARENT)["spec"]["rules"][0]["backendRefs"][0]
    validate(gw.http_route(with_port, PARENT))
    assert ref == {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool", "port": 8000}


def test_gke_routes_carry_no_timeouts() -> None:
    route = gw.http_route(QWEN32, PARENT, gw.ROUTE_REQUEST_TIMEOUT if GKE.route_timeouts else None)
    assert all("timeouts" not in rule for rule in route["spec"]["rules"])


def test_a_serving_route_rejects_what_the_route_could_not_carry() -> None:
    with pytest.raises(ValueError, match="names no model"):
        gw.ServingRoute("s", "ns", (), "pool")
    with pytest.raises(ValueError, match="twice"):
        gw.ServingRoute("s", "ns", ("m", "m"), "pool")
    with pytest.raises(ValueError, match="at most 16"):
        gw.ServingRoute("s", "ns", tuple(f"m{i}" for i in range(17)), "pool")
    gw.ServingRoute("s", "ns", tuple(f"m{i}" for i in range(16)), "pool")


# Across namespaces ------------------------------------------------------------------------------------------


def test_a_route_beside_its_pool_needs_no_reference_grant() -> None:
    """The route crosses into the Gateway's namespace through parentRefs (allowedRoutes governs that); its
    backendRef stays in its own namespace, so no ReferenceGrant is needed."""
    for serving in (QWEN32, QWEN8):
        route = gw.http_route(serving, PARENT)
        validate(route)
        assert route["metadata"]["namespace"] == serving.namespace != PARENT.namespace
        assert all("namespace" not in ref for rule in route["spec"]["rules"] for ref in rule["backendRefs"])


def test_the_gateway_admits_exactly_the_serving_namespaces() -> None:
    gateway = gw.gateway(
        PARENT.name, PARENT.namespace, GKE.name, route_namespaces=["serving-qwen3-8b", "serving-qwen3-32b"]
    )
    validate(gateway)
    selector = gateway["spec"]["listeners"][0]["allowedRoutes"]["namespaces"]["selector"]
    assert selector["matchExpressions"][0]["values"] == ["serving-qwen3-32b", "serving-qwen3-8b"]
    assert gateway["spec"]["gatewayClassName"] == "gke-l7-regional-external-managed"


# Gateway classes -------------------------------------------------------------------------------------------


def test_gke_uses_its_managed_regional_classes() -> None:
    assert GKE.name == "gke-l7-regional-external-managed"
    assert (GKE.managed, GKE.bbr_provider, GKE.route_timeouts, GKE.data_plane_in_cluster) == (True, "gke", False, False)
    assert "proxy-only subnet" in GKE.prerequisite
    assert gw.gateway_class_for("gke", "gke-l7-rilb").name == "gke-l7-rilb"
    with pytest.raises(ValueError, match="on GKE the gateway class is one of"):
        gw.gateway_class_for("gke", "istio")


def test_an_existing_cluster_names_its_controller_as_a_prerequisite() -> None:
    assert (ISTIO.name, ISTIO.managed, ISTIO.bbr_provider, ISTIO.route_timeouts) == ("istio", False, "istio", True)
    assert "installed before this stack" in ISTIO.prerequisite
    kgateway = gw.gateway_class_for("amd-ci", "kgateway")
    assert (kgateway.name, kgateway.managed, kgateway.bbr_provider) == ("kgateway", False, "none")
    assert "kgateway must call BBR's ext_proc itself" in kgateway.prerequisite
    with pytest.raises(ValueError, match="needs its Gateway controller named: one of kgateway, istio"):
        gw.gateway_class_for("base")
    with pytest.raises(ValueError, match="not 'gke-l7-rilb'"):
        gw.gateway_class_for("base", "gke-l7-rilb")


def test_the_catalogs_classes_and_pins() -> None:
    assert versions.GKE_GATEWAY_CLASSES == ("gke-l7-regional-external-managed", "gke-l7-rilb")
    assert versions.EXISTING_CLUSTER_GATEWAY_CLASSES == ("kgateway", "istio")
    assert versions.BBR_VERSION == "v1.5.0"
    assert versions.bbr_image("v1.5.0") == "registry.k8s.io/gateway-api-inference-extension/bbr:v1.5.0"
    assert versions.BBR_CHART_REPOSITORY == "oci://registry.k8s.io/gateway-api-inference-extension/charts/"


# Body-based routing: values, render, hardening -------------------------------------------------------------


def _paths(values: Any, prefix: str = "") -> set[str]:
    if not isinstance(values, dict):
        return {prefix}
    out: set[str] = set()
    for key, value in values.items():
        out |= _paths(value, f"{prefix}.{key}" if prefix else key)
    return out


def test_every_value_set_is_one_the_chart_defines() -> None:
    chart = yaml.safe_load((BBR_CHART / "values.yaml").read_text())
    ours = _paths(bbr.bbr_values())
    # bbr.plugins is a list (replaced whole) and so a leaf of both.
    assert ours <= _paths(chart), sorted(ours - _paths(chart))


def test_bbr_values_pin_the_image_and_send_it_through_the_mirror() -> None:
    values = bbr.bbr_values()
    assert values["bbr"]["image"] == {
        "registry": "registry.k8s.io",
        "repository": "gateway-api-inference-extension/bbr",
        "tag": "v1.5.0",
        "pullPolicy": "IfNotPresent",
    }
    mirrored = bbr.bbr_values(mirror=lambda image: "mirror.example.com/k8s/" + image.split("/", 1)[1])
    assert mirrored["bbr"]["image"]["registry"] == "mirror.example.com"
    assert mirrored["bbr"]["image"]["repository"] == "k8s/gateway-api-inference-extension/bbr"
    assert mirrored["bbr"]["image"]["tag"] == "v1.5.0"
    assert values["provider"] == {"name": "gke"}
    assert bbr.bbr_values(provider="istio", gateway_name="gw")["provider"] == {"name": "istio"}
    assert bbr.bbr_values(provider="istio", gateway_name="gw")["inferenceGateway"] == {"name": "gw"}
    assert values["bbr"]["multiNamespace"] is False
    assert values["bbr"]["plugins"] == [
        {
            "type": "body-field-to-header",
            "name": "model-extractor",
            "json": {"fieldName": "model", "headerName": "X-Gateway-Model-Name"},
        }
    ]


def _helm() -> Path:
    if not install_helm.HELM.is_file():
        pytest.fail(f"Helm {install_helm.HELM_VERSION} is not at {install_helm.HELM}: `./run test` installs it")
    return install_helm.HELM


@functools.cache
def _render(provider: gw.BbrProvider) -> tuple[dict[str, Any], ...]:
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HELM_CACHE_HOME": home, "HELM_CONFIG_HOME": home, "HELM_DATA_HOME": home}
        values = Path(home) / "values.json"
        values.write_text(json.dumps(bbr.bbr_values(provider=provider, gateway_name=PARENT.name)))
        command = [str(_helm()), "template", "bbr", str(BBR_CHART), "-n", PARENT.namespace, "-f", str(values)]
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def _one(objects: tuple[dict[str, Any], ...], kind: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind]
    return found


def test_the_chart_itself_sets_no_security_context_or_resources() -> None:
    """Why the hardening is a post-render transform: the chart's Deployment carries neither."""
    deployment = _one(_render("gke"), "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "securityContext" not in container and "resources" not in container
    assert "securityContext" not in deployment["spec"]["template"]["spec"]


def test_the_rendered_bbr_is_hardened_and_valid() -> None:
    objects = [bbr.harden_bbr_object(o) for o in _render("istio")]
    deployment = _one(tuple(objects), "Deployment")
    validate(deployment)
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == "registry.k8s.io/gateway-api-inference-extension/bbr:v1.5.0"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsNonRoot": True,
        "runAsUser": 2000,
        "readOnlyRootFilesystem": True,
    }
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["automountServiceAccountToken"] is True
    assert pod["serviceAccountName"] == "body-based-router-bbr"
    plugin = container["args"][container["args"].index("--plugin") + 1]
    assert plugin == 'body-field-to-header:model-extractor:{"fieldName":"model","headerName":"X-Gateway-Model-Name"}'
    assert container["args"].count("--plugin") == 1
    # Single-namespace RBAC: a Role, never a ClusterRole.
    assert {o["kind"] for o in objects} == {"ServiceAccount", "Role", "RoleBinding", "Deployment", "Service"} | {
        "EnvoyFilter",
        "DestinationRule",
    }
    # Every other object passes through unchanged.
    service = _one(_render("istio"), "Service")
    assert bbr.harden_bbr_object(service) == service


def test_the_ports_are_the_charts() -> None:
    gke = _render("gke")
    assert _one(gke, "Service")["spec"]["ports"] == [
        {"protocol": "TCP", "port": 9004, "targetPort": 9004, "appProtocol": "HTTP2"}
    ]
    extension = _one(gke, "GCPRoutingExtension")["spec"]
    assert extension["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": PARENT.name}]
    assert extension["extensionChains"][0]["extensions"][0]["backendRef"]["port"] == bbr.BBR_EXT_PROC_PORT == 9004
    health = _one(gke, "HealthCheckPolicy")["spec"]["default"]["config"]["grpcHealthCheck"]
    assert health["port"] == bbr.BBR_HEALTH_PORT == 9005
    istio = _one(_render("istio"), "EnvoyFilter")
    cluster = istio["spec"]["configPatches"][0]["patch"]["value"]["typed_config"]["grpc_service"]["envoy_grpc"]
    assert cluster["cluster_name"] == "outbound|9004||body-based-router.llm-d-gateway.svc.cluster.local"
    assert _one(_render("none"), "Deployment")["spec"]["template"]["metadata"]["labels"] == {"app": "body-based-router"}
    assert not [o for o in _render("none") if o["kind"] in ("EnvoyFilter", "GCPRoutingExtension")]


# Body-based routing: NetworkPolicy -------------------------------------------------------------------------


def test_in_cluster_only_the_gateways_own_proxies_reach_ext_proc() -> None:
    policy = bbr.bbr_network_policy(PARENT.namespace, bbr.data_plane_for(ISTIO, PARENT.name))
    validate(policy)
    assert policy["metadata"]["namespace"] == "llm-d-gateway"
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {"app": "body-based-router"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {"podSelector": {"matchLabels": {"gateway.networking.k8s.io/gateway-name": "inference-gateway"}}}
                ],
                "ports": [{"protocol": "TCP", "port": 9004}],
            }
        ],
    }


def test_behind_gke_the_proxy_only_subnet_reaches_ext_proc_and_health_checkers_the_health_port() -> None:
    plane = bbr.data_plane_for(GKE, PARENT.name, ["10.129.0.0/23"])
    policy = bbr.bbr_network_policy(PARENT.namespace, plane)
    validate(policy)
    assert policy["spec"]["ingress"] == [
        {"from": [{"ipBlock": {"cidr": "10.129.0.0/23"}}], "ports": [{"protocol": "TCP", "port": 9004}]},
        {
            "from": [{"ipBlock": {"cidr": "35.191.0.0/16"}}, {"ipBlock": {"cidr": "130.211.0.0/22"}}],
            "ports": [{"protocol": "TCP", "port": 9005}],
        },
    ]
    with pytest.raises(ValueError, match="proxy-only subnet range"):
        bbr.data_plane_for(GKE, PARENT.name)


def test_the_policy_selects_the_pods_the_chart_renders() -> None:
    policy = bbr.bbr_network_policy(PARENT.namespace, bbr.data_plane_for(ISTIO, PARENT.name))
    labels = _one(_render("istio"), "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
