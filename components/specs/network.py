"""NetworkPolicies: every pod of the stack admits only the traffic serving needs.

Ingress, and egress only for the pod that holds API rights on the others (the cache annotator: `egress_policy`);
every other pod's egress stays open, so DNS, the Hugging Face download and the Mooncake and LMCache clients keep
working. Kubelet probes come from the node and are never subject to a NetworkPolicy.
Every port is read from where it is defined: the router's `targetPorts`, the workloads' own
`containerPort`s, the chart's ports in `labels`; a connector's daemons' policies sit in its module.

Traffic between model-server pods (P/D with NIXL, the Ray group of a multi-host replica, the
Mooncake transfer engine) uses ports the engines pick at run time, so peers admit each other on
every port, and only where the stack has such traffic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from components.catalog import labels
from components.manifest import Manifest, NetworkPolicy, plain

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server (1.22+)
# The scrapers' own pod labels: prometheus-operator labels every Prometheus pod it runs;
# GKE Managed Prometheus runs its collectors as the DaemonSet `collector` in `gmp-system`.
SCRAPERS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "prometheus-operator": ({}, {"app.kubernetes.io/name": "prometheus"}),
    "gke-managed-prometheus": ({NAMESPACE_NAME_LABEL: "gmp-system"}, {"app.kubernetes.io/name": "collector"}),
}


@dataclass(frozen=True)
class Peer:
    """Pods that may connect: by pod labels, in the policy's namespace or in namespaces by labels ({}: any)."""

    pod_labels: dict[str, str]
    namespace_labels: dict[str, str] | None = None
    roles: tuple[str, ...] = ()  # model-server roles (`llm-d.ai/role` in ...); empty: no such condition
    cidr: str | None = None  # addresses outside the pods instead (a load balancer's proxy-only subnet)

    def manifest(self) -> Manifest:
        if self.cidr is not None:
            return {"ipBlock": {"cidr": self.cidr}}
        selector: Manifest = {"matchLabels": dict(self.pod_labels)}
        if self.roles:
            selector["matchExpressions"] = [{"key": labels.ROLE_LABEL, "operator": "In", "values": list(self.roles)}]
        out: Manifest = {"podSelector": selector}
        if self.namespace_labels is not None:
            out["namespaceSelector"] = {"matchLabels": dict(self.namespace_labels)}
        return out

    def elsewhere(self, namespace: str) -> Peer:
        """The same pods, seen from a policy in another namespace."""
        return Peer(self.pod_labels, {NAMESPACE_NAME_LABEL: namespace}, self.roles)


ANYONE = None  # a rule without `from`: every source, in the cluster and outside it


@dataclass(frozen=True)
class Rule:
    sources: list[Peer] | None  # ANYONE, or these peers
    ports: list[int] | None  # None: every port

    def manifest(self) -> Manifest:
        out: Manifest = {}
        if self.sources is not None:
            out["from"] = [p.manifest() for p in self.sources]
        if self.ports is not None:
            out["ports"] = [{"protocol": "TCP", "port": p} for p in sorted(set(self.ports))]
        return out


def policy(name: str, namespace: str, pods: Manifest, rules: list[Rule]) -> Manifest:
    """Admit `rules` to the pods `pods` selects (a label selector); everything else is refused. Named
    `<name>-ingress` after the workload it guards, so the two never share a resource name."""
    record: NetworkPolicy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{name}-ingress", "namespace": namespace, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
        "spec": {"podSelector": pods, "policyTypes": ["Ingress"], "ingress": [r.manifest() for r in rules]},
    }
    return plain(record)


# The API server, as a pod's NetworkPolicy sees it: its `kubernetes` Service (port 443) is translated to the API
# server's own address and port before a policy matches (443 on GKE and EKS, 6443 where kubeadm built the control
# plane), an address the stack cannot know: any address on these ports.
API_SERVER_PORTS = (443, 6443)


@dataclass(frozen=True)
class Egress:
    destinations: list[Peer] | None  # ANYONE: any address
    ports: list[int]

    def manifest(self) -> Manifest:
        out: Manifest = {"ports": [{"protocol": "TCP", "port": p} for p in sorted(set(self.ports))]}
        if self.destinations is not None:
            out["to"] = [p.manifest() for p in self.destinations]
        return out


def egress_policy(name: str, namespace: str, pods: Manifest, rules: list[Egress]) -> Manifest:
    """Let the pods `pods` selects connect only as `rules` say; named `<name>-egress`."""
    record: NetworkPolicy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{name}-egress", "namespace": namespace, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
        "spec": {"podSelector": pods, "policyTypes": ["Egress"], "egress": [r.manifest() for r in rules]},
    }
    return plain(record)


def container_ports(workload: Manifest) -> list[int]:
    """Every TCP port a workload's pods declare (native sidecars included)."""
    spec = workload.get("spec") or {}
    lws = spec.get("leaderWorkerTemplate") or {}
    templates = [spec["template"]] if "template" in spec else [t for k, t in lws.items() if k.endswith("Template")]
    return sorted(
        {
            int(port["containerPort"])
            for template in templates
            for key in ("containers", "initContainers")
            for container in (template.get("spec") or {}).get(key) or []
            for port in container.get("ports") or []
            if port.get("protocol", "TCP") == "TCP"
        }
    )


@dataclass(frozen=True)
class ServingRole:
    """One model-server role: the labels of its pods and the ports they declare."""

    role: str
    pod_labels: dict[str, str]
    ports: list[int]


@dataclass(frozen=True)
class StackTraffic:
    """Who talks to whom in one stack, as the plan resolved it."""

    namespace: str
    router_pods: dict[str, str]  # the labels the router chart puts on its EPP pods
    router_target_ports: list[int]  # the router's modelServers.targetPorts
    roles: list[ServingRole]
    peer_traffic: bool  # P/D, multi-host or MooncakeStore: model-server pods talk to each other
    scraper: Peer
    verification: dict[str, str] | None  # the verification Job's pod labels, when it runs
    server_peers: tuple[Peer, ...] = ()  # the connector's daemons that exchange KV with the model servers
    # A cluster stack's Gateway in front: its data plane calls the EPP's ext-proc and then the chosen server.
    gateway: tuple[Peer, ...] = ()
    annotator: dict[str, str] | None = None  # the cache annotator's pod labels: it reads the servers' /metrics
    # Precise routing: the KV-event ports the model servers publish on, which the router's pickers dial (and
    # nobody else: the scraper's rule leaves them out).
    event_ports: list[int] = field(default_factory=list)

    @property
    def model_servers(self) -> Peer:
        """Every model-server pod of the stack, of any role (labels they all share)."""
        shared = dict(self.roles[0].pod_labels)
        for role in self.roles[1:]:
            shared = {k: v for k, v in shared.items() if role.pod_labels.get(k) == v}
        shared.pop(labels.ROLE_LABEL, None)
        return Peer(shared, roles=tuple(sorted(r.role for r in self.roles)))

    def role(self, name: str) -> ServingRole:
        return next(r for r in self.roles if r.role == name)


def model_server_policy(traffic: StackTraffic, role: ServingRole, name: str) -> Manifest:
    clients = [Peer(traffic.router_pods)]
    if traffic.verification is not None:
        clients.append(Peer(traffic.verification))
    scraped = [p for p in role.ports if p not in traffic.event_ports]
    rules = [Rule(clients, traffic.router_target_ports), Rule([traffic.scraper], scraped)]
    if traffic.event_ports:  # the router's pickers subscribe to every pod's KV-cache events
        rules.append(Rule([Peer(traffic.router_pods)], traffic.event_ports))
    if traffic.gateway:
        rules.append(Rule(list(traffic.gateway), traffic.router_target_ports))
    if traffic.annotator is not None:  # its /metrics only: the serving port, where the engines serve it
        rules.append(Rule([Peer(traffic.annotator)], [labels.MODEL_SERVER_PORT]))
    if traffic.peer_traffic:
        rules.append(Rule([traffic.model_servers], None))
    rules += [Rule([peer], None) for peer in traffic.server_peers]
    return policy(name, traffic.namespace, {"matchLabels": dict(role.pod_labels)}, rules)


def router_policy(traffic: StackTraffic, name: str) -> Manifest:
    """Clients reach Envoy from anywhere; the scraper reads the EPP's metrics. The ext-proc port is
    Envoy's, over loopback in the same pod."""
    rules = [Rule(ANYONE, [labels.ENVOY_LISTENER_PORT]), Rule([traffic.scraper], [labels.EPP_METRICS_PORT])]
    if traffic.gateway:  # behind a cluster stack's Gateway, its data plane asks the EPP which server to use
        rules.append(Rule(list(traffic.gateway), [labels.EPP_EXT_PROC_PORT]))
    return policy(name, traffic.namespace, {"matchLabels": dict(traffic.router_pods)}, rules)


def closed_policy(namespace: str, name: str, pod_labels: dict[str, str]) -> Manifest:
    """For pods that only call out (the verification and model-fetch Jobs): nothing may connect to them."""
    return policy(name, namespace, {"matchLabels": dict(pod_labels)}, [])
