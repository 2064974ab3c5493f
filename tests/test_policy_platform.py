"""The platform rules catch their failure cases: images and charts pinned and from allowed registries,
requests, privilege, root, hardened contexts, host namespaces and paths, service-account tokens,
NetworkPolicies, the HF token, the cluster's hardening (the other rules: tests/test_policies.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog.accelerators import ACCELERATORS
from components.catalog.labels import ACCELERATOR_PROFILE_LABEL
from policies.resources import Resource, pods
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review import offline
from tests.policy_cases import (
    DEPLOYMENT,
    RULE,
    container_of,
    deployment_of,
    recorded,
    violations_of,
)


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-openai:latest",
        "vllm/vllm-openai:LATEST",
        "vllm/vllm-openai:Stable",
        "vllm/vllm-tpu:nightly",
        "vllm/vllm-openai",
        "ghcr.io/x/y:main",
        "vllm/vllm-openai@sha256:" + "a" * 63,
        "vllm/vllm-openai@sha256:" + "A" * 64,
        "vllm/vllm-openai@md5:" + "a" * 32,
        "vllm/vllm-openai:v0.26.0@sha256",
    ],
)
def test_mutable_images_are_caught(image: str) -> None:
    resources = recorded()
    container_of(resources)["image"] = image
    assert violations_of(RULE["images-pinned"], resources)
    assert violations_of(RULE["images-pinned"], resources, allowMutableTags=True) == []


def test_digest_pinned_image_passes_and_unpinned_chart_is_caught() -> None:
    resources = recorded()
    container_of(resources)["image"] = "vllm/vllm-openai@sha256:" + "a" * 64
    assert violations_of(RULE["images-pinned"], resources) == []
    next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart").props["version"] = "v0"
    assert "chart version v0" in violations_of(RULE["images-pinned"], resources)[0]


def test_container_without_requests_is_caught() -> None:
    resources = recorded()
    assert violations_of(RULE["resource-requests"], resources) == []
    del container_of(resources)["resources"]["requests"]["memory"]
    assert violations_of(RULE["resource-requests"], resources)


def test_privileged_container_is_caught_unless_allowed() -> None:
    resources = recorded()
    container_of(resources)["securityContext"] = {"privileged": True}
    assert violations_of(RULE["privileged-containers"], resources)
    assert violations_of(RULE["privileged-containers"], resources, allowedContainers=["modelserver"]) == []


SECURITY_RULES = ("privileged-containers", "root-containers", "hardened-containers", "host-namespaces", "host-paths")


@pytest.mark.parametrize("name", ["gpu-vllm-native-cpu", "gpu-vllm-mooncake-store-fs", "tpu-v7-vllm-native-cpu"])
def test_the_rendered_pods_pass_the_security_rules(name: str) -> None:
    resources = recorded(name)
    for rule in SECURITY_RULES:
        assert violations_of(RULE[rule], resources) == [], rule


def test_root_without_an_exemption_is_caught() -> None:
    resources = recorded()
    context = container_of(resources)["securityContext"]
    assert context["runAsNonRoot"] is True and violations_of(RULE["root-containers"], resources) == []
    context["runAsUser"] = 0
    assert "runs as root without an exemption" in violations_of(RULE["root-containers"], resources)[0]
    del context["runAsUser"], context["runAsNonRoot"]  # the image's user: root unless it says otherwise
    assert violations_of(RULE["root-containers"], resources)
    deployment_of(resources).props["spec"]["template"]["spec"]["securityContext"] = {"runAsNonRoot": True}
    assert violations_of(RULE["root-containers"], resources) == []


def test_a_root_exemption_names_its_container() -> None:
    """The shared tier's writers run as root; the same container without the tier's mount may not."""
    resources = recorded("gpu-vllm-native-fs")
    assert container_of(resources)["securityContext"]["runAsUser"] == 0
    assert violations_of(RULE["root-containers"], resources) == []
    container_of(resources)["volumeMounts"] = []
    assert violations_of(RULE["root-containers"], resources)


@pytest.mark.parametrize(("name", "profile"), [("amd-vllm-native-cpu", "amd"), ("tpu-v6-vllm-native-cpu", "tpu-v6")])
def test_an_accelerators_root_exemption_is_its_profiles(name: str, profile: str) -> None:
    """ROCm's and vllm-tpu's images run as root because their profiles say why (`root_reason`); the same pod
    labelled with a profile that gives none (the H100's) is caught, though it keeps its vendor label."""
    resources = recorded(name)
    [server] = [r for r in resources if ACCELERATOR_PROFILE_LABEL in _template_labels(r)]
    container = server.props["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"]["runAsUser"] == 0 and ACCELERATORS[profile].root_reason
    assert violations_of(RULE["root-containers"], resources) == []
    _template_labels(server)[ACCELERATOR_PROFILE_LABEL] = "gpu"
    assert not ACCELERATORS["gpu"].root_reason
    assert "runs as root without an exemption" in violations_of(RULE["root-containers"], resources)[0]


def _template_labels(resource: Resource) -> dict[str, str]:
    labels: dict[str, str] = (
        ((resource.props.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels", {})
    )
    return labels


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("allowPrivilegeEscalation", True),
        ("capabilities", {"drop": ["NET_RAW"]}),
        ("capabilities", {"drop": ["ALL"], "add": ["SYS_ADMIN"]}),
        ("seccompProfile", {"type": "Unconfined"}),
    ],
)
def test_a_container_without_the_hardened_context_is_caught(field: str, value: Any) -> None:
    resources = recorded()
    assert violations_of(RULE["hardened-containers"], resources) == []
    container_of(resources)["securityContext"][field] = value
    assert violations_of(RULE["hardened-containers"], resources)


def test_capabilities_are_added_back_only_where_an_exemption_grants_them() -> None:
    resources = recorded("gpu-vllm-mooncake-store-cpu")  # RDMA: IPC_LOCK
    server = next(r for r in resources if r.type == DEPLOYMENT and "model-server" in r.name)
    container = server.props["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert violations_of(RULE["hardened-containers"], resources) == []
    del container["resources"]["requests"]["rdma/ib"]
    assert "beyond its exemptions" in violations_of(RULE["hardened-containers"], resources)[0]


@pytest.mark.parametrize("key", ["hostNetwork", "hostPID", "hostIPC"])
def test_host_namespaces_are_caught(key: str) -> None:
    resources = recorded()
    spec = deployment_of(resources).props["spec"]["template"]["spec"]
    spec[key] = False
    assert violations_of(RULE["host-namespaces"], resources) == []
    spec[key] = True
    assert key in violations_of(RULE["host-namespaces"], resources)[0]


def test_host_paths_outside_the_allow_list_are_caught() -> None:
    resources = recorded("gpu-vllm-mooncake-store-fs")  # the Mooncake client's offload directory
    assert any("hostPath" in v for p in pods(resources) for v in p.spec.get("volumes") or [])
    assert violations_of(RULE["host-paths"], resources) == []
    volumes = deployment_of(resources).props["spec"]["template"]["spec"]["volumes"]
    volumes.append({"name": "root", "hostPath": {"path": "/"}})
    assert "host path /" in violations_of(RULE["host-paths"], resources)[0]
    assert violations_of(RULE["host-paths"], resources, allowedHostPaths=["/", "/mnt/mooncake-offload"]) == []


def test_a_token_mounted_without_api_access_is_caught() -> None:
    resources = recorded("dev")  # the verification Job lists pods: its account is bound, its token mounted
    assert violations_of(RULE["token-automount"], resources) == []
    spec = deployment_of(resources).props["spec"]["template"]["spec"]
    spec["automountServiceAccountToken"] = True
    assert "granted nothing" in violations_of(RULE["token-automount"], resources)[0]
    del spec["automountServiceAccountToken"]  # then the ServiceAccount's own setting decides
    assert violations_of(RULE["token-automount"], resources) == []
    next(r for r in resources if r.type == "kubernetes:core/v1:ServiceAccount" and "verify" not in r.name).props[
        "automountServiceAccountToken"
    ] = True
    assert violations_of(RULE["token-automount"], resources)
    binding = next(r for r in resources if r.type.endswith(":RoleBinding"))
    binding.props["subjects"] = []
    assert len(violations_of(RULE["token-automount"], resources)) == 2  # the Job's account is bound no more


def test_charts_from_outside_the_allowed_registries_are_caught() -> None:
    resources = recorded("eks-h100-efs")  # the router chart (OCI) and the NVIDIA device plugin (Helm repo)
    assert violations_of(RULE["chart-registries"], resources) == []
    router = next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart" and "router" in r.props["values"])
    router.props["chart"] = "oci://ghcr.io/someone-else/charts/llm-d-router-standalone"
    assert "someone-else" in violations_of(RULE["chart-registries"], resources)[0]
    plugin = next(r for r in resources if "repositoryOpts" in r.props)
    plugin.props["repositoryOpts"]["repo"] = "https://example.com/charts"
    assert len(violations_of(RULE["chart-registries"], resources)) == 2


def test_a_pod_without_a_network_policy_is_caught() -> None:
    resources = recorded("gpu-vllm-lmcache-server")
    assert violations_of(RULE["network-policies"], resources) == []
    policies = [r for r in resources if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy"]
    lmcache = next(r for r in policies if r.props["metadata"]["name"] == "lmcache-engine-ingress")
    [message] = violations_of(RULE["network-policies"], [r for r in resources if r is not lmcache])
    assert "'app.kubernetes.io/name': 'lmcache'" in message
    lmcache.props["metadata"]["namespace"] = "elsewhere"  # a policy only governs its own namespace
    assert violations_of(RULE["network-policies"], resources)
    assert violations_of(RULE["network-policies"], resources, requireNetworkPolicies=False) == []


def test_router_pods_without_a_network_policy_are_caught() -> None:
    resources = recorded()
    router = next(
        r.props
        for r in resources
        if r.type.endswith("NetworkPolicy") and r.props["metadata"]["name"].endswith("-epp-ingress")
    )
    router["spec"]["podSelector"]["matchLabels"] = {"app.kubernetes.io/name": "tiered-prefix-cache-epp"}
    [message] = violations_of(RULE["network-policies"], resources)  # the chart's pods do not carry that label
    assert "router's pods {'llm-d-router-gateway': 'tiered-prefix-cache-epp'}" in message


def test_with_network_policies_off_the_rule_reports_every_pod() -> None:
    recording = offline.record(
        plan(loading.load_preset("gpu-vllm-native-cpu", ["network_policies.enabled=false"])), "x"
    )
    resources = [Resource(r.type, r.name, r.inputs) for r in recording.resources]
    assert len(violations_of(RULE["network-policies"], resources)) == 2  # the model servers and the router


def test_literal_hf_token_is_caught() -> None:
    resources = recorded()
    assert violations_of(RULE["hf-token-secret"], resources) == []
    container_of(resources)["env"][0] = {"name": "HF_TOKEN", "value": "hf_literal"}
    assert violations_of(RULE["hf-token-secret"], resources)


def test_cluster_hardening() -> None:
    good = Resource(
        "gcp:container/cluster:Cluster",
        "gke",
        {
            "privateClusterConfig": {"enablePrivateNodes": True},
            "workloadIdentityConfig": {"workloadPool": "p.svc.id.goog"},
            "nodeConfig": {"shieldedInstanceConfig": {"enableSecureBoot": True}},
        },
    )
    assert violations_of(RULE["cluster-hardening"], [good]) == []
    bad = Resource("gcp:container/cluster:Cluster", "gke", {"nodeConfig": {}})
    assert len(violations_of(RULE["cluster-hardening"], [bad])) == 3
    eks = Resource("aws:eks/cluster:Cluster", "eks", {})
    assert violations_of(RULE["cluster-hardening"], [eks])
    oidc = Resource("aws:iam/openIdConnectProvider:OpenIdConnectProvider", "oidc", {})
    assert violations_of(RULE["cluster-hardening"], [eks, oidc]) == []
