"""What the stack runs, as the rules find it in resource inputs: the model servers and their
connector configs, the router charts, LMCache's clients and servers, the accelerator a pod holds (by the
profile key it carries), the transfer block its workload is stamped with; and the rule that every accelerator or
connector pod carries its keys and every connector's workload its stamp."""

from __future__ import annotations

from typing import Any

from components.catalog.accelerators import ACCELERATORS
from components.catalog.labels import ACCELERATOR_PROFILE_LABEL, KV_CONNECTOR_LABEL, KV_TRANSFER_BLOCK_ANNOTATION
from policies.checks.rule_types import NoConfig, Violation
from policies.resources import (
    CHART_TYPE,
    Pod,
    Resource,
    args,
    chart_values,
    connectors,
    env,
    kv_transfer_config,
    pods,
)


def model_servers(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any], dict[str, Any]]]:
    """(pod, container, kv-transfer-config) for every container started with a connector config."""
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            config = kv_transfer_config(container)
            if config is not None:
                out.append((pod, container, config))
    return out


def router_charts(resources: list[Resource]) -> list[Resource]:
    return [r for r in resources if r.type == CHART_TYPE and "router" in chart_values(r)]


def lmcache_clients(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any]]]:
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            kinds = {c.get("kv_connector") for c in connectors(kv_transfer_config(container))}
            if kinds & {"LMCacheConnectorV1", "LMCacheMPConnector"} or "LMCACHE_KV_CONFIG" in env(container):
                out.append((pod, container))
    return out


def lmcache_servers(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any]]]:
    return [
        (pod, c)
        for pod in pods(resources)
        for c in pod.containers(init=False)
        if args(c)[:2] in (["lmcache", "server"], ["/opt/venv/bin/lmcache", "server"])
    ]


def accelerator_of(resources: list[Resource], pod: Pod, container: dict[str, Any]) -> tuple[str, int] | None:
    """The catalog accelerator a model-server pod runs on, by the profile key it carries
    (`llm-d.ai/accelerator-profile`), and how many of that profile's devices it holds. None: it carries no
    profile the catalog knows, or holds none of its devices (`identity_labels` reports both; never guessed
    from the device resource, which two profiles of one vendor share)."""
    profile = ACCELERATORS.get(pod.labels.get(ACCELERATOR_PROFILE_LABEL, ""))
    if profile is None:
        return None
    limits = ((container.get("resources") or {}).get("limits")) or {}
    if profile.device_resource and profile.device_resource in limits:
        return profile.key, int(limits[profile.device_resource])
    if profile.dra_device_class:
        for request in _dra_requests(resources, pod):
            if request.get("deviceClassName") == profile.dra_device_class:
                return profile.key, int(request.get("count") or 1)
    return None


def _transfer_block_stamp(pod: Pod) -> object:
    """The value of the workload's `llm-d.ai/kv-transfer-block-tokens` annotation (None: it has none)."""
    return ((pod.owner.props.get("metadata") or {}).get("annotations") or {}).get(KV_TRANSFER_BLOCK_ANNOTATION)


def transfer_block_of(pod: Pod) -> int | None:
    """Tokens per block a model-server pod's connector moves between host memory and the accelerator, as its
    workload is stamped (`llm-d.ai/kv-transfer-block-tokens` on the workload's own metadata; the connector's
    `transfer_block`). None: no stamp, or not a positive whole number (`identity_labels` reports both; never
    re-derived from the server's arguments)."""
    value = _transfer_block_stamp(pod)
    text = value if isinstance(value, str) else ""
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None


def _holds_devices(resources: list[Resource], pod: Pod) -> bool:
    """Whether any container of the pod requests a catalog accelerator's devices (whichever profile's)."""
    resources_named = {p.device_resource for p in ACCELERATORS.values() if p.device_resource}
    classes = {p.dra_device_class for p in ACCELERATORS.values() if p.dra_device_class}
    limits = {k for c in pod.containers() for k in (((c.get("resources") or {}).get("limits")) or {})}
    return bool(limits & resources_named) or any(
        r.get("deviceClassName") in classes for r in _dra_requests(resources, pod)
    )


def identity_labels(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A pod that holds accelerator devices or runs a connector says what it is: its accelerator profile's key
    and its connector's key as labels (components/catalog/labels.py), which the rules read instead of guessing
    from the device resource it requests; a connector's workload also says the block its connector moves (an
    annotation), which `tiers-beat-recompute` reads instead of re-deriving it from the server's arguments."""
    out: dict[tuple[str, str], Violation] = {}
    for pod in pods(resources):
        for message in _stamp_problems(pod):
            out.setdefault((pod.owner.urn or pod.owner.name, message), Violation(pod.owner, message))
        connector = any(kv_transfer_config(c) is not None for c in pod.containers(init=False))
        if not connector and not _holds_devices(resources, pod):
            continue
        profile = pod.labels.get(ACCELERATOR_PROFILE_LABEL)
        problems = []
        if profile is None:
            problems.append(
                f"its pods hold accelerator devices or a connector but carry no {ACCELERATOR_PROFILE_LABEL} label:"
                " label them with their accelerator profile's key"
            )
        elif profile not in ACCELERATORS:
            problems.append(
                f"its pods carry {ACCELERATOR_PROFILE_LABEL}: {profile}, which names no accelerator profile"
                f" (one of {', '.join(ACCELERATORS)})"
            )
        elif not any(accelerator_of(resources, pod, c) for c in pod.containers(init=False)):
            p = ACCELERATORS[profile]
            problems.append(
                f"its pods carry {ACCELERATOR_PROFILE_LABEL}: {profile} but request none of its devices"
                f" ({p.device_resource or f'DRA {p.dra_device_class}'})"
            )
        if not pod.labels.get(KV_CONNECTOR_LABEL):
            problems.append(
                f"its pods hold accelerator devices or a connector but carry no {KV_CONNECTOR_LABEL} label: label"
                " them with their connector's key"
            )
        for message in problems:
            out.setdefault((pod.owner.urn or pod.owner.name, message), Violation(pod.owner, message))
    return list(out.values())


def _stamp_problems(pod: Pod) -> list[str]:
    """A pod labelled with a connector whose workload does not say, as a positive whole number of tokens, the
    block that connector moves."""
    connector = pod.labels.get(KV_CONNECTOR_LABEL)
    if not connector or transfer_block_of(pod) is not None:
        return []
    value = _transfer_block_stamp(pod)
    what = "the tokens per block its connector moves between host memory and the accelerator (the connector's"
    what += " transfer block)"
    if value is None:
        return [
            f"its pods carry {KV_CONNECTOR_LABEL}: {connector} but it carries no {KV_TRANSFER_BLOCK_ANNOTATION}"
            f" annotation: annotate the workload's own metadata with {what}"
        ]
    problem = f"it carries {KV_TRANSFER_BLOCK_ANNOTATION}: {value!r}, not a positive whole number as a string"
    return [f"{problem}: set it to {what}"]


def _dra_requests(resources: list[Resource], pod: Pod) -> list[dict[str, Any]]:
    names = {c.get("resourceClaimTemplateName") for c in pod.spec.get("resourceClaims") or []}
    return [
        request.get("exactly") or request
        for r in resources
        if r.type.endswith(":ResourceClaimTemplate") and (r.props.get("metadata") or {}).get("name") in names
        for request in ((((r.props.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or [])
    ]


def namespace_of(resource: Resource) -> str:
    return str((resource.props.get("metadata") or {}).get("namespace") or "default")
