"""Rules over isolation beyond the pod: every pod behind an ingress NetworkPolicy, the cluster hardened
(private nodes, Workload Identity, shielded nodes; IRSA on EKS)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.catalog.cloud_resources import EKS_CLUSTER, GKE_CLUSTER, GKE_NODE_POOL, OIDC_PROVIDER
from components.catalog.labels import router_pod_labels
from policies.checks.inventory import (
    namespace_of,
    router_charts,
)
from policies.checks.rule_types import NoConfig, Settings, Violation, setting
from policies.resources import (
    Resource,
    chart_values,
    pods,
)

NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def selector_matches(selector: dict[str, Any], pod_labels: dict[str, str]) -> bool:
    """A Kubernetes label selector ({}: every pod) against a pod's labels."""
    if any(pod_labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in pod_labels
        ok = {
            "In": present and pod_labels.get(key) in values,
            "NotIn": not present or pod_labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(operator), False)
        if not ok:
            return False
    return True


def _ingress_selectors(resources: list[Resource]) -> list[tuple[str, dict[str, Any]]]:
    """(namespace, pod selector) of every NetworkPolicy that governs ingress."""
    out = []
    for r in resources:
        spec = r.props.get("spec") or {}
        if r.type == NETWORK_POLICY_TYPE and "Ingress" in (spec.get("policyTypes") or ["Ingress"]):
            out.append((namespace_of(r), spec.get("podSelector") or {}))
    return out


@dataclass(frozen=True)
class NetworkPoliciesConfig(Settings):
    require_network_policies: bool = setting(
        "requireNetworkPolicies", True, "false: skip the rule (a cluster that does not enforce NetworkPolicy)"
    )


def network_policy_per_pod(resources: list[Resource], config: NetworkPoliciesConfig) -> list[Violation]:
    """Every pod of the stack, and the router chart's EPP pods, is selected by an ingress NetworkPolicy."""
    if not config.require_network_policies:
        return []
    selectors = _ingress_selectors(resources)

    def covered(namespace: str, pod_labels: dict[str, str]) -> bool:
        return any(ns == namespace and selector_matches(sel, pod_labels) for ns, sel in selectors)

    out = [
        Violation(pod.owner, f"no NetworkPolicy selects the pods {pod.labels}: they accept traffic from anywhere")
        for pod in pods(resources)
        if not covered(namespace_of(pod.owner), pod.labels)
    ]
    for chart in router_charts(resources):
        values = chart_values(chart)
        created = (values["router"].get("inferencePool") or {}).get("create") is not False
        epp = router_pod_labels(str(chart.props.get("name") or chart.name), created)
        if not covered(str(chart.props.get("namespace") or "default"), epp):
            out.append(Violation(chart, f"no NetworkPolicy selects the router's pods {epp}"))
    return out


def cluster_hardening(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """GKE: private nodes, Workload Identity, shielded nodes. EKS: IRSA (an OIDC provider in the stack)."""
    out = []
    has_oidc = any(r.type == OIDC_PROVIDER.token for r in resources)
    for r in resources:
        p = r.props
        if r.type == GKE_CLUSTER.token:
            if not (p.get("privateClusterConfig") or {}).get("enablePrivateNodes"):
                out.append(Violation(r, "GKE cluster without private nodes"))
            if not (p.get("workloadIdentityConfig") or {}).get("workloadPool"):
                out.append(Violation(r, "GKE cluster without Workload Identity"))
        if r.type in (GKE_CLUSTER.token, GKE_NODE_POOL.token):
            shielded = ((p.get("nodeConfig") or {}).get("shieldedInstanceConfig")) or {}
            if p.get("nodeConfig") is not None and not shielded.get("enableSecureBoot"):
                out.append(Violation(r, "GKE nodes without Shielded VM secure boot"))
        if r.type == EKS_CLUSTER.token and not has_oidc:
            out.append(Violation(r, "EKS cluster without an IAM OIDC provider (IRSA)"))
    return out
