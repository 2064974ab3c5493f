"""The change plan, field by field: every force-new field replaces its object, every other field does not,
and every kind of storage shows at risk when a replacement or a removal deletes it.

The expected table is written out here rather than read from `stacks/review/changeplan.py`, so a field dropped
from (or added to) the module's table fails a test.
"""

from __future__ import annotations

from typing import Any

import pytest

from stacks.review.changeplan import STATE_TYPES, Change, classify, plan_changes, plan_lines

# pulumi-kubernetes' forceNew table (provider/pkg/provider/diff.go) and the cloud providers' ForceNew inputs.
FORCE_NEW: dict[str, tuple[str, ...]] = {
    "kubernetes:apps/v1:Deployment": ("spec.selector",),
    "kubernetes:apps/v1:StatefulSet": ("spec.selector", "spec.serviceName", "spec.volumeClaimTemplates"),
    "kubernetes:batch/v1:Job": ("spec.template", "spec.completions", "spec.parallelism", "spec.selector"),
    "kubernetes:core/v1:ConfigMap": ("data", "binaryData"),
    "kubernetes:core/v1:Secret": ("data", "stringData", "type"),
    # The provider's own list; the claim's size is not in it (seen under the real engine: `./run e2e`).
    "kubernetes:core/v1:PersistentVolumeClaim": (
        "spec.accessModes",
        "spec.selector",
        "spec.storageClassName",
        "spec.volumeName",
    ),
    "kubernetes:core/v1:PersistentVolume": ("spec.csi", "spec.nfs", "spec.hostPath", "spec.local"),
    "kubernetes:core/v1:Service": ("spec.clusterIP",),
    "kubernetes:storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
    "gcp:lustre/instance:Instance": ("instanceId", "location", "filesystem", "network", "project"),
    "aws:efs/fileSystem:FileSystem": ("creationToken", "encrypted", "kmsKeyId", "performanceMode"),
    "gcp:container/cluster:Cluster": ("name", "location", "project", "network"),
    "aws:eks/cluster:Cluster": ("name",),
}
STORAGE = (
    "kubernetes:core/v1:PersistentVolumeClaim",
    "kubernetes:core/v1:PersistentVolume",
    "gcp:lustre/instance:Instance",
    "aws:efs/fileSystem:FileSystem",
)
KUBERNETES = [k for k in FORCE_NEW if k.startswith("kubernetes:")]
CASES = [(kind, field) for kind, fields in FORCE_NEW.items() for field in fields]


def _row(kind: str, name: str = "x", namespace: str = "ns", **options: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {"spec": {"replicas": 2}}
    if kind.startswith("kubernetes:"):
        inputs["metadata"] = {"name": name, "namespace": namespace}
    return {"type": kind, "name": "r", "inputs": inputs, "options": options}


def _change(kind: str, paths: list[str], **options: Any) -> Change:
    return classify(_row(kind, **options), _row(kind, **options), paths)


@pytest.mark.parametrize(("kind", "field"), CASES)
@pytest.mark.parametrize("below", ["", ".x", "[0]"])
def test_every_force_new_field_replaces(kind: str, field: str, below: str) -> None:
    change = _change(kind, [field + below])
    assert change.kind == "replace", change
    assert f"`{field + below}`" in change.why
    assert change.at_risk == (kind in STORAGE)


@pytest.mark.parametrize(("kind", "field"), CASES)
def test_a_field_that_only_shares_a_force_new_prefix_updates_in_place(kind: str, field: str) -> None:
    change = _change(kind, [field + "Extra"])
    assert change.kind != "replace", change


@pytest.mark.parametrize("kind", FORCE_NEW)
def test_a_field_outside_the_table_updates_in_place(kind: str) -> None:
    change = _change(kind, ["metadata.labels.team"] if kind.startswith("kubernetes:") else ["labels.team"])
    assert change == Change("update", kind, "r", change.why)
    assert change.why.startswith("in place: ")


@pytest.mark.parametrize("field", ["metadata.name", "metadata.namespace"])
@pytest.mark.parametrize("kind", [*KUBERNETES, "kubernetes:apps/v1:DaemonSet"])
def test_a_kubernetes_objects_name_and_namespace_replace_it(kind: str, field: str) -> None:
    assert _change(kind, [field]).kind == "replace"


def test_replace_on_changes_forces_a_replacement() -> None:
    kind = "kubernetes:apps/v1:DaemonSet"
    assert _change(kind, ["spec.updateStrategy.type"]).kind == "update"
    forced = _change(kind, ["spec.updateStrategy.type"], replaceOnChanges=["inputs.spec.updateStrategy"])
    assert forced.kind == "replace"
    assert "`spec.updateStrategy.type`" in forced.why


def test_the_same_fixed_name_deletes_first_anything_else_creates_first() -> None:
    kind, paths = "kubernetes:core/v1:ConfigMap", ["data.key"]
    assert _change(kind, paths).why.startswith("delete-first: `data.key` cannot change in place; it is gone")
    renamed = classify(_row(kind, name="a"), _row(kind, name="b"), ["data.key", "metadata.name"])
    assert renamed.why.startswith("create-first:") and "old and new overlap" in renamed.why
    moved = classify(_row(kind, namespace="a"), _row(kind, namespace="b"), ["data.key", "metadata.namespace"])
    assert moved.why.startswith("create-first:")
    unnamed = classify(_row(kind, name=""), _row(kind, name=""), paths)  # a generated name
    assert unnamed.why.startswith("create-first:")
    cloud = _change("gcp:lustre/instance:Instance", ["location"])  # cloud providers create the new one first
    assert cloud.why.startswith("create-first:")
    named = _row("gcp:lustre/instance:Instance")
    named["inputs"]["metadata"] = {"name": "x", "namespace": "ns"}  # even with a fixed name in its inputs
    assert classify(named, named, ["location"]).why.startswith("create-first:")


@pytest.mark.parametrize("kind", STORAGE)
def test_every_kind_of_storage_is_at_risk_when_replaced_unprotected(kind: str) -> None:
    assert kind in STATE_TYPES
    change = _change(kind, [FORCE_NEW[kind][0]])
    assert (change.kind, change.at_risk) == ("replace", True)
    assert change.line().startswith(f"- **replace** **storage at risk** `{kind}` r: ")
    protected = _change(kind, [FORCE_NEW[kind][0]], protect=True)
    assert protected.kind == "replace" and protected.at_risk
    assert "which `protect` refuses: `pulumi up` stops here" in protected.why


@pytest.mark.parametrize("kind", STORAGE)
def test_every_kind_of_storage_is_at_risk_when_removed(kind: str) -> None:
    [change] = plan_changes({(kind, "r"): _row(kind)}, {}, {})
    assert change == Change("removed", kind, "r", "deleted with its data", True)


def test_state_types_are_exactly_the_storage_kinds() -> None:
    assert set(STATE_TYPES) == set(STORAGE)


def test_stateless_objects_are_not_at_risk() -> None:
    change = _change("kubernetes:core/v1:ConfigMap", ["data.key"])
    assert change.kind == "replace" and not change.at_risk
    assert "storage at risk" not in change.line()
    [removed] = plan_changes({("kubernetes:core/v1:ConfigMap", "r"): _row("kubernetes:core/v1:ConfigMap")}, {}, {})
    assert removed == Change("removed", "kubernetes:core/v1:ConfigMap", "r", "deleted", False)


@pytest.mark.parametrize(
    ("kind", "template"),
    [
        ("kubernetes:apps/v1:Deployment", "spec.template"),
        ("kubernetes:apps/v1:DaemonSet", "spec.template"),
        ("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "spec.leaderWorkerTemplate"),
    ],
)
def test_a_pod_template_change_rolls_and_a_replica_change_scales(kind: str, template: str) -> None:
    rolling = _change(kind, [template + ".spec.containers[0].image"])
    assert rolling.kind == "rolling" and "each restart drops that pod's CPU tier" in rolling.why
    before, after = _row(kind), _row(kind)
    after["inputs"]["spec"]["replicas"] = 3
    assert classify(before, after, ["spec.replicas"]) == Change(
        "scale", kind, "r", "in place, 2 → 3 replicas; no pod restarts"
    )


def test_the_strategy_a_roll_uses_is_named() -> None:
    kind = "kubernetes:apps/v1:Deployment"
    row = _row(kind)
    row["inputs"]["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    assert "(maxSurge 1, maxUnavailable 0)" in classify(row, row, ["spec.template.x"]).why
    daemon = _row("kubernetes:apps/v1:DaemonSet")
    daemon["inputs"]["spec"]["updateStrategy"] = {"type": "RollingUpdate"}
    assert "(one node at a time)" in classify(daemon, daemon, ["spec.template.x"]).why
    assert "(the controller's default)" in _change(kind, ["spec.template.x"]).why


def test_added_resources_and_lines() -> None:
    kind = "kubernetes:core/v1:Service"
    lines = plan_lines({}, {(kind, "r"): _row(kind)}, {})
    assert lines == [f"- **added** `{kind}` r: created"]


def test_a_claims_size_changes_in_place_as_the_engine_plans_it() -> None:
    """`./run e2e gpu-vllm-native-fs`: `storage.size` 9000Gi -> 18000Gi, the engine planned `update [diff: ~spec]`."""
    change = _change("kubernetes:core/v1:PersistentVolumeClaim", ["spec.resources.requests.storage"])
    assert change.kind == "update" and not change.at_risk
    assert "allows expansion" in change.why and "never shrinks" in change.why
