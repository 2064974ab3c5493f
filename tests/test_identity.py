"""Things say what they are: a model-server pod carries its accelerator profile's and its connector's keys as
labels, and the policy pack reads them (policies/checks/inventory.py `accelerator_of`) instead of inferring the
accelerator from the device resource the pod requests; a pod that holds devices without them is reported."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from components.catalog import accelerators, labels, rates, support
from components.units import GB, ByteSize
from policies.checks import inventory, tier_payoff
from policies.resources import Resource, pods
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review import offline
from tests.policy_cases import RULE, recorded, violations_of

TFLOPS = 10**12


def _b200(monkeypatch: pytest.MonkeyPatch) -> None:
    """An NVIDIA B200, added at test time: the H100's device resource, vendor and variant labels and image, its
    own memory and rates (a quarter of the H100's bf16 peak would be wrong, but tells the two apart)."""
    h100 = accelerators.ACCELERATORS["gpu"]
    b200 = dataclasses.replace(
        h100,
        key="b200",
        reference_hardware="NVIDIA B200 180 GB",
        device_memory=ByteSize(180 * GB),
        device_memory_from="NVIDIA B200 data sheet: 180 GB HBM3e",
        memory_bandwidth=8e12,
        rates=dataclasses.replace(
            h100.rates,
            bf16_peak=rates.Figure(2250 * TFLOPS, "NVIDIA B200 data sheet: 4.5 PFLOPS bf16 with sparsity, half dense"),
            host_link=rates.HostLink("PCIe Gen5 x16 (slow)", ((1, 1.0e9),), "a link slow enough to fail the payoff"),
        ),
    )
    monkeypatch.setitem(accelerators.ACCELERATORS, "b200", b200)
    combo = ("gpu", "vllm", "native", "cpu", "single-host")
    monkeypatch.setitem(support.SUPPORTED, ("b200", *combo[1:]), support.SUPPORTED[combo])


def _record(name: str, *overrides: str) -> list[Resource]:
    recording = offline.record(plan(loading.load_named(name, list(overrides))), name)
    return [Resource(r.type, r.name, r.inputs) for r in recording.resources]


def _server(resources: list[Resource]) -> tuple[Any, dict[str, Any]]:
    return next(
        (pod, c)
        for pod in pods(resources)
        for c in pod.containers(init=False)
        if pod.labels.get(labels.ROLE_LABEL) == "decode" and c.get("name") == "modelserver"
    )


def test_a_model_server_pod_carries_its_profile_and_connector_keys() -> None:
    for name, accelerator, connector in (
        ("gpu-vllm-native-cpu", "gpu", "native"),
        ("gpu-sglang-native-cpu", "gpu", "sglang-hicache"),
        ("tpu-v6-vllm-native-cpu", "tpu-v6", "tpu-offload"),
        ("xpu-vllm-lmcache-connector-cpu", "xpu", "lmcache-connector"),
    ):
        pod, _ = _server(recorded(name))
        assert pod.labels[labels.ACCELERATOR_PROFILE_LABEL] == accelerator, name
        assert pod.labels[labels.KV_CONNECTOR_LABEL] == connector, name


def test_a_new_accelerator_is_judged_by_its_own_profile_and_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    """A B200 requests `nvidia.com/gpu` and carries the H100's vendor and variant labels: read from the device
    resource it was an H100, judged with H100 rates. Read from its profile label, it is a B200 with its own."""
    _b200(monkeypatch)
    resources = _record("gpu-vllm-native-cpu", "cache.accelerator=b200")
    pod, container = _server(resources)
    assert pod.labels[labels.ACCELERATOR_VENDOR_LABEL] == "nvidia"  # the same labels as an H100's pods
    assert inventory.accelerator_of(resources, pod, container) == ("b200", 2)
    [server] = tier_payoff.tiered_servers(resources)
    assert server.accelerator == "b200"
    messages = violations_of(RULE["tiers-beat-recompute"], resources)
    assert messages and all("x b200" in m and "PCIe Gen5 x16 (slow)" in m for m in messages)
    # the H100 it was taken for pays off on its own link
    assert violations_of(RULE["tiers-beat-recompute"], recorded("gpu-vllm-native-cpu")) == []


def test_a_pod_with_devices_and_no_identity_is_reported_not_guessed() -> None:
    resources = recorded("gpu-vllm-native-cpu")
    rule = RULE["identity-labels"]
    assert violations_of(rule, resources) == []
    template = _server(resources)[0].owner.props["spec"]["template"]["metadata"]["labels"]
    del template[labels.ACCELERATOR_PROFILE_LABEL]
    del template[labels.KV_CONNECTOR_LABEL]
    pod, container = _server(resources)
    assert inventory.accelerator_of(resources, pod, container) is None
    assert tier_payoff.tiered_servers(resources) == []  # not judged as an H100
    assert violations_of(rule, resources) == [
        f"its pods hold accelerator devices or a connector but carry no {labels.ACCELERATOR_PROFILE_LABEL} label:"
        " label them with their accelerator profile's key",
        f"its pods hold accelerator devices or a connector but carry no {labels.KV_CONNECTOR_LABEL} label: label"
        " them with their connector's key",
    ]
    template[labels.ACCELERATOR_PROFILE_LABEL] = "gaudi3"
    assert violations_of(rule, resources)[0].startswith(
        f"its pods carry {labels.ACCELERATOR_PROFILE_LABEL}: gaudi3, which names no accelerator profile"
    )
    template[labels.ACCELERATOR_PROFILE_LABEL] = "amd"  # a profile it does not hold the devices of
    assert violations_of(rule, resources)[0] == (
        f"its pods carry {labels.ACCELERATOR_PROFILE_LABEL}: amd but request none of its devices (amd.com/gpu)"
    )


def _stamped(resources: list[Resource]) -> tuple[Resource, dict[str, Any]]:
    """The model-server workload and its own annotations (where the transfer block is stamped)."""
    owner = _server(resources)[0].owner
    annotations: dict[str, Any] = owner.props["metadata"]["annotations"]
    return owner, annotations


STAMP_ASK = (
    "the tokens per block its connector moves between host memory and the accelerator (the connector's transfer block)"
)


# Not a stamp: missing, zero, negative, a decimal, words, empty, padded, fullwidth digits (str.isdigit takes
# them), a number that is not a string.
@pytest.mark.parametrize("value", [None, "0", "-16", "16.0", "sixteen", "", " 16", "\uff11\uff16", 16])
def test_a_connector_workload_without_a_whole_positive_stamp_is_reported_not_judged(value: Any) -> None:
    """The rule reads the transfer block from the workload's stamp and nowhere else: a workload whose pods carry a
    connector's key but whose stamp is missing or not a positive whole number (as a string: an annotation's value
    is one) is reported by `identity-labels` and left out of `tiers-beat-recompute`."""
    resources = recorded("gpu-vllm-native-cpu")
    owner, annotations = _stamped(resources)
    rule = RULE["identity-labels"]
    assert annotations[labels.KV_TRANSFER_BLOCK_ANNOTATION] == "16"
    assert violations_of(rule, resources) == []
    annotations[labels.KV_TRANSFER_BLOCK_ANNOTATION] = "1"  # the smallest block there is
    assert violations_of(rule, resources) == []
    assert [s.block_tokens for s in tier_payoff.tiered_servers(resources)] == [1]
    if value is None:
        del annotations[labels.KV_TRANSFER_BLOCK_ANNOTATION]
        expected = (
            f"its pods carry {labels.KV_CONNECTOR_LABEL}: native but it carries no"
            f" {labels.KV_TRANSFER_BLOCK_ANNOTATION} annotation: annotate the workload's own metadata with {STAMP_ASK}"
        )
    else:
        annotations[labels.KV_TRANSFER_BLOCK_ANNOTATION] = value
        expected = (
            f"it carries {labels.KV_TRANSFER_BLOCK_ANNOTATION}: {value!r}, not a positive whole number as a string:"
            f" set it to {STAMP_ASK}"
        )
    [violation] = rule.check(resources, dict(rule.config))
    assert violation.resource is owner and violation.message == expected
    assert tier_payoff.tiered_servers(resources) == []


def test_a_multi_host_workload_is_reported_once_for_its_leader_and_worker_pods() -> None:
    resources = recorded("tpu-v7-vllm-native-cpu-multi-host")
    [lws] = [r for r in resources if r.type.endswith(":LeaderWorkerSet")]
    assert len([p for p in pods(resources) if p.owner is lws]) == 2  # its leader's and its workers' templates
    annotations = lws.props["metadata"]["annotations"]
    assert annotations[labels.KV_TRANSFER_BLOCK_ANNOTATION] == "128"  # the TPU offload's KV block
    assert annotations["leaderworkerset.sigs.k8s.io/exclusive-topology"] == "cloud.google.com/gke-nodepool"
    del annotations[labels.KV_TRANSFER_BLOCK_ANNOTATION]
    [message] = violations_of(RULE["identity-labels"], resources)
    assert f"carries no {labels.KV_TRANSFER_BLOCK_ANNOTATION} annotation" in message


def test_the_stamp_sits_on_the_workload_not_its_pod_template() -> None:
    """A workload's own annotations change in place; its pod template's restart every pod (the change plan)."""
    resources = recorded("gpu-vllm-native-cpu")
    owner, annotations = _stamped(resources)
    template = owner.props["spec"]["template"]["metadata"]
    assert labels.KV_TRANSFER_BLOCK_ANNOTATION in annotations
    assert labels.KV_TRANSFER_BLOCK_ANNOTATION not in (template.get("annotations") or {})
