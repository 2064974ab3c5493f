"""The ground floor's types for a Kubernetes object (or any part of one) as plain data.

`Manifest` is any object, untyped. The records below type the objects the specs build most (a Deployment, its
pod template, spec and containers, a Service, a NetworkPolicy) so mypy checks their field names where they are
built; at run time each is the same dict, and `plain` hands it on as a `Manifest` (the renders, the passes and the
policy rules read objects of every kind alike). Fields are the API's, as the specs set them; the parts the
connectors and the passes add (env, volumes, probes, resources, security contexts) stay `Manifest`.
"""

from typing import Any, Literal, Required, TypedDict, cast

Manifest = dict[str, Any]
"""A Kubernetes object, or a part of one, as the JSON-shaped dict the API server takes."""


class ObjectMeta(TypedDict, total=False):
    name: Required[str]
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]


class TemplateMeta(TypedDict, total=False):
    """A pod template's metadata: its pods' labels (and annotations)."""

    labels: dict[str, str]
    annotations: dict[str, str]


class Probes(TypedDict):
    """A serving container's three probes, set together."""

    startupProbe: Manifest
    livenessProbe: Manifest
    readinessProbe: Manifest


class Container(TypedDict, total=False):
    name: Required[str]
    image: Required[str]
    imagePullPolicy: str
    command: list[str]
    args: list[str]
    workingDir: str
    env: list[Manifest]
    ports: list[Manifest]
    startupProbe: Manifest
    livenessProbe: Manifest
    readinessProbe: Manifest
    resources: Manifest
    volumeMounts: list[Manifest]
    securityContext: Manifest
    lifecycle: Manifest
    restartPolicy: str  # a native sidecar (an init container that keeps running)


class PodSpec(TypedDict, total=False):
    serviceAccountName: str
    restartPolicy: str
    enableServiceLinks: bool
    terminationGracePeriodSeconds: int
    initContainers: list[Container]
    containers: Required[list[Container]]
    volumes: list[Manifest]
    nodeSelector: dict[str, str]
    affinity: Manifest
    tolerations: list[Manifest]
    securityContext: Manifest
    resourceClaims: list[Manifest]


class PodTemplateSpec(TypedDict):
    metadata: TemplateMeta
    spec: PodSpec


class LabelSelector(TypedDict):
    matchLabels: dict[str, str]


class DeploymentSpec(TypedDict, total=False):
    replicas: int
    strategy: Manifest
    selector: Required[LabelSelector]
    template: Required[PodTemplateSpec]


class Deployment(TypedDict):
    apiVersion: Literal["apps/v1"]
    kind: Literal["Deployment"]
    metadata: ObjectMeta
    spec: DeploymentSpec


class ServicePort(TypedDict, total=False):
    name: str
    port: Required[int]
    targetPort: int | str
    protocol: Literal["TCP", "UDP"]


class ServiceSpec(TypedDict, total=False):
    type: Literal["ClusterIP", "NodePort", "LoadBalancer"]
    clusterIP: str
    publishNotReadyAddresses: bool
    selector: dict[str, str]
    ports: Required[list[ServicePort]]


class Service(TypedDict):
    apiVersion: Literal["v1"]
    kind: Literal["Service"]
    metadata: ObjectMeta
    spec: ServiceSpec


class NetworkPolicySpec(TypedDict, total=False):
    podSelector: Required[Manifest]
    policyTypes: list[Literal["Ingress", "Egress"]]
    ingress: list[Manifest]
    egress: list[Manifest]


class NetworkPolicy(TypedDict):
    apiVersion: Literal["networking.k8s.io/v1"]
    kind: Literal["NetworkPolicy"]
    metadata: ObjectMeta
    spec: NetworkPolicySpec


def plain(record: Deployment | Service | NetworkPolicy | PodTemplateSpec | Container | ObjectMeta) -> Manifest:
    """A typed record as the `Manifest` it is at run time (the same dict, not a copy)."""
    return cast(Manifest, record)


def recreated_deployment(namespace: str, name: str, labels: dict[str, str], pod: PodSpec) -> Deployment:
    """One replica, replaced whole on a change (`Recreate`: never two at once): the project's own in-cluster loops
    (the tier evictor, the cache annotator), each the only writer of what it manages."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"namespace": namespace, "labels": dict(labels), "name": name},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod},
        },
    }
