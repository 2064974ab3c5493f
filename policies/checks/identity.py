"""The rule that a pod is what its labels say (`identity-labels`): a pod that holds accelerator devices or runs a
connector carries its accelerator profile's and its connector's keys (components/catalog/labels.py), and no
label is trusted alone. The profile must agree with the devices the pod requests (resource and count) and the
nodes it selects, which must say which device a node has where other profiles request the same devices (an
H100, an H200 and an A100 all request `nvidia.com/gpu`); the connector with what the pod runs (the `kv_connector`
class or engine flag the connector's own module writes); a connector's workload carries its stamps (the transfer
block, the CPU tier, the model's geometry).
The facts are the catalog's and the connectors' own, read through `inventory.py`."""

from __future__ import annotations

from typing import Any

from components.catalog.accelerators import ACCELERATORS, AcceleratorProfile
from components.catalog.labels import (
    ACCELERATOR_PROFILE_LABEL,
    CPU_TIER_BYTES_ANNOTATION,
    GKE_ACCELERATOR_LABEL,
    GKE_TPU_ACCELERATOR_LABEL,
    INSTANCE_TYPE_LABEL,
    KV_CONNECTOR_LABEL,
    KV_TRANSFER_BLOCK_ANNOTATION,
    NODE_POOL_LABEL,
    ROLE_LABEL,
)
from components.catalog.node_pins import device_peers, node_pins, product_labels, values_pinning
from components.formulas.payoff import MAX_TRANSFER_BLOCK_TOKENS
from policies.checks.inventory import (
    CONNECTORS,
    connectors_run,
    cpu_tier_of,
    devices_of,
    holds_devices,
    native_cpu_tier,
    node_pool_accelerators,
    stamp_problems,
    transfer_block_of,
)
from policies.checks.rule_types import NoConfig, Violation
from policies.resources import Pod, Resource, connectors, kv_transfer_config, pods

# The P/D handoffs the catalog's accelerators carry (`kv_transport`): a decode pod of a connector that
# disaggregates runs its handoff alone, its tier being on the prefill pods.
HANDOFF_CLASSES = {a.kv_transport.connector_class for a in ACCELERATORS.values() if a.kv_transport is not None}


def identity_labels(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A pod that holds accelerator devices, runs a connector or carries either key says what it is, and what it
    says agrees with what it requests, selects and runs; the rules read these keys instead of guessing from the
    device resource a pod requests (which two profiles of one vendor share)."""
    out: dict[tuple[str, str], Violation] = {}
    pools = node_pool_accelerators(resources)
    workloads: dict[int, set[str]] = {}  # what a workload's pods run (a LeaderWorkerSet's leader runs the server)
    for pod in pods(resources):
        workloads.setdefault(id(pod.owner), set()).update(connectors_run(resources, pod))
    for pod in pods(resources):
        run = workloads[id(pod.owner)]
        configured = any(kv_transfer_config(c) is not None for c in pod.containers(init=False))
        labelled = ACCELERATOR_PROFILE_LABEL in pod.labels or KV_CONNECTOR_LABEL in pod.labels
        if not (labelled or run or configured or holds_devices(resources, pod)):
            continue
        profile_problems = _profile_problems(resources, pod, pools)
        problems = [
            *profile_problems,
            *_connector_problems(pod, run if not _handoff_only(pod) else run | {pod.labels[KV_CONNECTOR_LABEL]}),
            *_stamp_messages(pod, profile_trusted=not profile_problems),
        ]
        for message in problems:
            out.setdefault((pod.owner.urn or pod.owner.name, message), Violation(pod.owner, message))
    return list(out.values())


def _profile_problems(resources: list[Resource], pod: Pod, pools: dict[str, str]) -> list[str]:
    key = pod.labels.get(ACCELERATOR_PROFILE_LABEL)
    if key is None:
        return [
            f"its pods hold accelerator devices or a connector but carry no {ACCELERATOR_PROFILE_LABEL} label:"
            " label them with their accelerator profile's key"
        ]
    profile = ACCELERATORS.get(key)
    if profile is None:
        return [
            f"its pods carry {ACCELERATOR_PROFILE_LABEL}: {key}, which names no accelerator profile"
            f" (one of {', '.join(ACCELERATORS)})"
        ]
    said = f"its pods carry {ACCELERATOR_PROFILE_LABEL}: {key}"
    counts = [n for c in pod.containers() if (n := devices_of(resources, pod, c, profile))]
    out = []
    if not counts:
        out.append(f"{said} but request none of its devices ({_devices(profile)})")
    for count in counts:
        if count > profile.devices_per_node:
            out.append(
                f"{said} but request {count} of its devices ({_devices(profile)}), more than the"
                f" {profile.devices_per_node} a node of it has"
            )
    out += [f"{said} but {problem}" for problem in _foreign_devices(resources, pod, profile)]
    out += [f"{said} but {problem}" for problem in _selection_problems(pod, profile, pools)]
    out += [f"{said} but {problem}" for problem in (_unpinned(pod, profile, pools) if counts else [])]
    return out


def _devices(profile: AcceleratorProfile) -> str:
    return profile.device_resource or f"DRA {profile.dra_device_class}"


def _foreign_devices(resources: list[Resource], pod: Pod, profile: AcceleratorProfile) -> list[str]:
    """Another profile's devices the pod requests (a device resource or DRA class its own profile does not use)."""
    own = {profile.device_resource, profile.dra_device_class} - {None}
    found: dict[str, list[str]] = {}
    for other in ACCELERATORS.values():
        what = other.device_resource or other.dra_device_class
        if what in own or not any(devices_of(resources, pod, c, other) for c in pod.containers()):
            continue
        found.setdefault(_devices(other), []).append(other.key)
    return [f"also request {devices}, the devices of {', '.join(keys)}" for devices, keys in sorted(found.items())]


def _selected(pod: Pod) -> list[tuple[str, str]]:
    """(node label, value) pairs the pod requires of its node: its nodeSelector and the `In` values of its
    required node affinity (each term's, as any term may place it)."""
    out = [(str(k), str(v)) for k, v in (pod.spec.get("nodeSelector") or {}).items()]
    affinity = ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in affinity.get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            if expression.get("operator") == "In":
                out += [(str(expression.get("key")), str(v)) for v in expression.get("values") or []]
    return out


def _selection_problems(pod: Pod, profile: AcceleratorProfile, pools: dict[str, str]) -> list[str]:
    """The nodes a pod selects that serve another profile: a created pool whose machine type serves another
    (components/catalog/machines.py), TPU slices not of the profile's accelerator type, a GPU product, GKE guest
    accelerator or instance type the catalog gives another profile (components/catalog/node_pins.py), or a device
    label naming a device the profile is not."""
    pins, named = node_pins(), product_labels()
    out = []
    for key, value in _selected(pod):
        pinned = _pinned_by(key, value, pools, pins)
        own = values_pinning(profile.key, key)
        if key == NODE_POOL_LABEL:
            if pinned not in (None, profile.key):
                out.append(f"select node pool {value} ({key}), whose machines serve {pinned}")
        elif key == GKE_TPU_ACCELERATOR_LABEL and value != profile.tpu_accelerator:
            runs = f"runs on {profile.tpu_accelerator}" if profile.tpu_accelerator else "is no TPU"
            out.append(f"select TPU nodes of {value} ({key}), where the profile {runs}")
        elif pinned not in (None, profile.key):
            out.append(f"select {value} nodes ({key}), the machines of {pinned}")
        elif pinned is None and key in named and own:
            out.append(f"select {value} nodes ({key}), a device other than its {' or '.join(own)}")
    return out


def _pinned_by(key: str, value: str, pools: dict[str, str], pins: dict[tuple[str, str], str]) -> str | None:
    """The profile whose nodes alone carry this node label: a created pool's machines', or the catalog's."""
    return pools.get(value) if key == NODE_POOL_LABEL else pins.get((key, value))


def _pins_its_device(pod: Pod, pools: dict[str, str]) -> bool:
    """Whether every node the pod may land on has a device the catalog names: its nodeSelector holds a label that
    pins one, or each term of its required node affinity an `In` whose every value does (the terms are ORed)."""
    pins = node_pins()
    if any(_pinned_by(str(k), str(v), pools, pins) for k, v in (pod.spec.get("nodeSelector") or {}).items()):
        return True
    required = ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []

    def pins_term(term: dict[str, Any]) -> bool:
        return any(
            e.get("operator") == "In"
            and e.get("values")
            and all(_pinned_by(str(e.get("key")), str(v), pools, pins) for v in e["values"])
            for e in term.get("matchExpressions") or []
        )

    return bool(terms) and all(pins_term(t) for t in terms)


def _unpinned(pod: Pod, profile: AcceleratorProfile, pools: dict[str, str]) -> list[str]:
    """A pod of a profile whose devices other profiles request too (every NVIDIA GPU is `nvidia.com/gpu`) that
    selects no node label saying which device a node has: its devices do not tell which profile it runs on."""
    peers = device_peers(profile)
    if not peers or _pins_its_device(pod, pools):
        return []
    if profile.product is not None:
        how = (
            f"require {profile.product.label}: {profile.product.value}, or select a label that"
            f" pins {profile.key} (a created pool, {GKE_ACCELERATOR_LABEL}, {INSTANCE_TYPE_LABEL})"
        )
    else:
        how = "the profile names no GPU product to require (components/catalog/accelerators.py `product`)"
    return [
        f"select no node that says which of {', '.join(sorted([profile.key, *peers]))} it has (each requests"
        f" {_devices(profile)}): {how}"
    ]


def _connector_problems(pod: Pod, run: set[str]) -> list[str]:
    key = pod.labels.get(KV_CONNECTOR_LABEL)
    if not key:
        return [
            f"its pods hold accelerator devices or a connector but carry no {KV_CONNECTOR_LABEL} label: label"
            " them with their connector's key"
        ]
    connector = CONNECTORS.get(key)
    if connector is None:
        known = ", ".join(CONNECTORS)
        return [f"its pods carry {KV_CONNECTOR_LABEL}: {key}, which names no connector (one of {known})"]
    said = f"its pods carry {KV_CONNECTOR_LABEL}: {key}"
    out = []
    if key not in run:
        out.append(f"{said} but do not run it (no container {_mark(connector.key)})")
    # another connector whose mark the pod shows, unless it writes the same one (a connector built on another's)
    others = sorted(k for k in run - {key} if _mark(k) != _mark(key))
    out += [f"{said} but run {other} ({_mark(other)})" for other in others]
    return out


def _handoff_only(pod: Pod) -> bool:
    """A P/D decode pod of a connector that puts its tier on the prefill pods: every config it runs is a handoff."""
    connector = CONNECTORS.get(pod.labels.get(KV_CONNECTOR_LABEL, ""))
    if connector is None or not connector.disaggregates or pod.labels.get(ROLE_LABEL) != "decode":
        return False
    classes = [
        inner.get("kv_connector") for c in pod.containers(init=False) for inner in connectors(kv_transfer_config(c))
    ]
    return bool(classes) and all(k in HANDOFF_CLASSES for k in classes)


def _mark(key: str) -> str:
    """What shows a pod runs the connector: the class its kv-transfer config names, or its engine flag."""
    connector = CONNECTORS[key]
    if connector.kv_connector_class:
        return f"names kv_connector {connector.kv_connector_class} in its kv-transfer config"
    return f"runs with {connector.engine_flag}"


def _stamp_messages(pod: Pod, profile_trusted: bool) -> list[str]:
    """A pod labelled with a connector whose workload does not carry its stamps (whole numbers, a geometry), or
    whose numbers no engine runs: a transfer block that is not whole KV blocks of its profile (once the profile
    agrees with its devices and nodes: `profile_trusted`) or is past the largest a connector is set to, a CPU tier
    other than the one the native connector's own config gives."""
    connector = pod.labels.get(KV_CONNECTOR_LABEL)
    if not connector:
        return []
    out = []
    for annotation, value, wrong, what in stamp_problems(pod):
        if value is None:
            out.append(
                f"its pods carry {KV_CONNECTOR_LABEL}: {connector} but it carries no {annotation} annotation:"
                f" annotate the workload's own metadata with {what}"
            )
        else:
            shown = repr(value) if len(repr(value)) <= 80 else f"{repr(value)[:77]}..."
            out.append(f"it carries {annotation}: {shown}, {wrong}: set it to {what}")
    return out + (_block_messages(pod) if profile_trusted else []) + _tier_messages(pod)


def _block_messages(pod: Pod) -> list[str]:
    """The transfer block a connector moves is whole KV blocks of the pod's engine (its profile's block), and no
    connector is set to move more than MAX_TRANSFER_BLOCK_TOKENS."""
    block = transfer_block_of(pod)
    profile = ACCELERATORS.get(str(pod.labels.get(ACCELERATOR_PROFILE_LABEL)))
    if block is None or profile is None:
        return []  # reported as a stamp or a label of its own
    said = f"it carries {KV_TRANSFER_BLOCK_ANNOTATION}: {str(block)!r}"
    if block % profile.kv_block_tokens:
        return [
            f"{said}, not a whole number of the {profile.key} profile's {profile.kv_block_tokens}-token KV blocks"
            " its engine moves: set it to its connector's transfer block"
        ]
    if block > MAX_TRANSFER_BLOCK_TOKENS:
        return [
            f"{said}, more than the {MAX_TRANSFER_BLOCK_TOKENS:,} tokens any connector is set to move a block of:"
            " set it to its connector's transfer block"
        ]
    return []


def _tier_messages(pod: Pod) -> list[str]:
    """The CPU-tier stamp agrees with the tier the native connector's kv-transfer config gives (`cpu_bytes_to_use`,
    its own setting), where a container of the pod has one."""
    stamped = cpu_tier_of(pod)
    configured = {t for c in pod.containers(init=False) if (t := native_cpu_tier(c)) is not None}
    if stamped is None or not configured or configured == {stamped}:
        return []
    given = ", ".join(str(t) for t in sorted(configured))
    return [
        f"it carries {CPU_TIER_BYTES_ANNOTATION}: {str(stamped)!r}, not the {given} bytes its native connector's"
        " kv-transfer config gives (cpu_bytes_to_use): set it to the bytes of the CPU tier one of its pods holds"
    ]
