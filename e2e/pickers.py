"""A precise-routing preset's endpoint pickers as the chart runs them. The chart's objects are Helm's, not in the
program's manifests, so `check_live_matches` does not read them: this step reads the EPP Deployment back and holds it
to the rendered values (`router.epp_replicas` pickers, active-active, all ready, each pod with the tokenizer
sidecar the precise producer reads its tokens from)."""

from __future__ import annotations

import json
from typing import Any

from e2e.kwok import Cluster
from e2e.steps import StepError

CHART_TYPE = "kubernetes:helm.sh/v4:Chart"
EPP_CONTAINER = "epp"
TOKENIZER_CONTAINER = "vllm-render"  # the chart's sidecar (charts/router/templates/_deployment.yaml)


def precise_router(resources_json: str) -> tuple[str, dict[str, Any]] | None:
    """The router chart's namespace and `router` values where they run the tokenizer sidecar (precise routing)."""
    for resource in json.loads(resources_json):
        if resource.get("type") != CHART_TYPE:
            continue
        inputs = resource["inputs"]
        router: dict[str, Any] = inputs.get("values", {}).get("router", {})
        if (router.get("tokenizer") or {}).get("enabled"):
            return str(inputs["namespace"]), router
    return None


def check_pickers(cluster: Cluster, namespace: str, router: dict[str, Any]) -> str:
    wanted = int(router["epp"].get("replicas", 1))
    listed = json.loads(cluster.kubectl("get", "deployments", "-n", namespace, "-o", "json").stdout)["items"]
    pickers = [d for d in listed if EPP_CONTAINER in _containers(d)]
    if len(pickers) != 1:
        raise StepError(f"{len(pickers)} Deployments in {namespace} run an `{EPP_CONTAINER}` container; one expected")
    (picker,) = pickers
    name, containers = picker["metadata"]["name"], _containers(picker)
    if TOKENIZER_CONTAINER not in containers:
        raise StepError(f"Deployment {name}: no `{TOKENIZER_CONTAINER}` sidecar (containers: {', '.join(containers)})")
    ready = int((picker.get("status") or {}).get("readyReplicas") or 0)
    if int(picker["spec"].get("replicas", 1)) != wanted or ready != wanted:
        raise StepError(
            f"Deployment {name}: {picker['spec'].get('replicas')} replicas, {ready} ready; {wanted} rendered"
        )
    return (
        f"Deployment {name}: {ready} of {wanted} endpoint pickers ready, each with the `{TOKENIZER_CONTAINER}` sidecar"
    )


def _containers(deployment: dict[str, Any]) -> list[str]:
    return [c["name"] for c in deployment["spec"]["template"]["spec"]["containers"]]
