"""The faults run's own logic, without an engine: how it reads what the engine said, how it recovers, what it
counts as orphaned, the KWOK stage that keeps a pod with a missing image unready, and its arguments."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, cast

import pulumi
import pytest

from components.k8s_objects import PATCH_FORCE_ANNOTATION, force_field_ownership
from e2e import cluster_faults, kwok, recovery, rollout_state
from e2e.engine import Engine, Result
from e2e.steps import StepError

LOCKED_OUTPUT = (
    "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete"
    " the lock file with `pulumi cancel`.\n"
)
PENDING_OUTPUT = (
    "Diagnostics:\n  pulumi:pulumi:Stack (llmd-e2e):\n    error: the current deployment has 1 resource(s) with"
    " pending operations:\n      * urn:pulumi:e2e::llmd::kubernetes:apps/v1:Deployment::d, interrupted while"
    " creating\n    error: update failed\n"
)


class ScriptedEngine:
    """Answers each `pulumi` command with the next scripted result for its verb; records the commands."""

    def __init__(self, script: dict[str, list[Result]], workdir: Path = Path("/nonexistent")) -> None:
        self.script, self.commands, self.workdir = script, list[tuple[str, ...]](), workdir

    def run(self, *args: str, check: bool = False, timeout: float = 0) -> Result:
        self.commands.append(args)
        if args[:2] == ("stack", "export"):
            return self.script.get("export", [_result(0, '{"deployment": {}}')]).pop(0)
        result = self.script[args[0]].pop(0)
        if check and not result.ok:
            raise AssertionError(f"a checked command failed: {args}")
        return result


def _result(code: int, stdout: str = "") -> Result:
    return Result([], code, stdout, "")


def test_converge_cancels_a_stale_lock_then_clears_pending_creates_then_converges() -> None:
    engine = ScriptedEngine(
        {
            "up": [_result(255, LOCKED_OUTPUT), _result(255, PENDING_OUTPUT), _result(0, "Resources:\n 3 created")],
            "cancel": [_result(0)],
            "refresh": [_result(0)],
        }
    )
    said, steps = recovery.converge(cast(Engine, engine))
    assert said.startswith("error: the stack is currently locked")
    assert steps == ["pulumi cancel --yes", "pulumi refresh --clear-pending-creates --yes --skip-preview"]
    assert [c[0] for c in engine.commands if c[0] != "stack"] == ["up", "cancel", "up", "refresh", "up"]


def test_converge_clears_the_operations_a_killed_run_left_in_the_state_though_up_succeeds() -> None:
    """Measured: after SIGKILL while the chart's objects were created, every later `up` succeeded and warned
    "Attempting to deploy or update resources with 5 pending operations from previous deployment"."""
    pending = '{"deployment": {"pending_operations": [{"type": "creating", "resource": {"urn": "urn:a::b::epp"}}]}}'
    engine = ScriptedEngine(
        {
            "up": [_result(0, "warning: Attempting to deploy"), _result(0)],
            "refresh": [_result(0)],
            "export": [_result(0, pending), _result(0, '{"deployment": {}}')],
        }
    )
    said, steps = recovery.converge(cast(Engine, engine))
    assert said == "converged"
    assert steps == ["pulumi refresh --clear-pending-creates --yes --skip-preview"]
    assert recovery.pending_operations(cast(Engine, ScriptedEngine({"export": [_result(0, pending)]}))) == [
        "creating epp"
    ]


def test_converge_removes_the_checkpoint_attributes_a_kill_left_empty_and_only_those(tmp_path: Path) -> None:
    """Measured: SIGKILL while the file backend saved the state left `e2e.json.attrs` empty, and every command
    on the stack then failed with `failed to load checkpoint: EOF`; the checkpoint itself was whole."""
    stacks = tmp_path / "state" / ".pulumi" / "stacks" / "llmd"
    stacks.mkdir(parents=True)
    (stacks / "e2e.json.attrs").write_text("")
    (stacks / "e2e.json.bak.attrs").write_text('{"md5": "x"}')
    broken = _result(255, "error: failed to load checkpoint: EOF\n")
    engine = ScriptedEngine({"up": [broken, _result(0)]}, tmp_path)
    said, steps = recovery.converge(cast(Engine, engine))
    assert said == "error: failed to load checkpoint: EOF"
    assert steps == ["rm .pulumi/stacks/llmd/e2e.json.attrs (empty)"]
    assert sorted(p.name for p in stacks.iterdir()) == ["e2e.json.bak.attrs"]
    # Without an empty attribute file the same error has no step here: the run stops on it.
    with pytest.raises(StepError, match="did not converge"):
        recovery.converge(cast(Engine, ScriptedEngine({"up": [broken]}, tmp_path)))


def test_converge_stops_on_a_failure_the_readme_has_no_step_for() -> None:
    engine = ScriptedEngine({"up": [_result(255, "error: Server-Side Apply field conflict detected")]})
    with pytest.raises(StepError, match="did not converge"):
        recovery.converge(cast(Engine, engine))
    assert engine.commands == [("up", "--yes", "--skip-preview")]


def test_converge_on_a_clean_run_needs_no_step() -> None:
    said, steps = recovery.converge(cast(Engine, ScriptedEngine({"up": [_result(0, "Resources:\n 30 unchanged")]})))
    assert (said, steps) == ("converged", [])


def test_gist_is_the_first_error_or_the_pending_operations_warning() -> None:
    assert recovery.gist(_result(255, PENDING_OUTPUT)).startswith("error: the current deployment has 1 resource(s)")
    warned = "    pulumi:pulumi:Stack llmd-e2e  warning: Attempting to deploy or update resources with 1 pending"
    assert recovery.gist(_result(0, warned + " operations from previous deployment.\n")).startswith("Attempting")
    assert recovery.gist(_result(1, "error: update failed\n")) == "exit 1"
    urn = "urn:pulumi:e2e::llmd::llmd:cache_stack:CacheStack$kubernetes:apps/v1:Deployment::llmd-model-server-decode"
    said = recovery.gist(_result(1, f'error: update of resource "{urn}" failed: Get "https://127.0.0.1"\n'))
    assert said == 'error: update of resource llmd-model-server-decode failed: Get "https://127.0.0.1"'


def _object(kind: str, name: str, namespace: str = "ns", manager: str = "pulumi-kubernetes-1a2b") -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "managedFields": [{"manager": manager}]},
    }


def test_an_object_pulumi_applied_that_the_state_lacks_is_an_orphan_and_others_are_not() -> None:
    state = [
        {"type": "kubernetes:apps/v1:Deployment", "outputs": _object("Deployment", "server")},
        {"type": "kubernetes:helm.sh/v4:Chart", "outputs": {"kind": "Chart", "metadata": {"name": "chart"}}},
        {"type": "pulumi:providers:kubernetes", "outputs": {}},
    ]
    held = recovery.state_objects(state)
    assert held == [("Deployment", "ns", "server")]
    live = [
        _object("Deployment", "server"),
        _object("Deployment", "left-by-a-killed-run"),
        _object("ReplicaSet", "server-abc", manager="kube-controller-manager"),  # a controller's, not ours
        _object("Deployment", "server", namespace="other"),  # same name, another namespace
    ]
    orphans, twice = recovery.strays(live, held)
    assert orphans == ["Deployment/ns/left-by-a-killed-run", "Deployment/other/server"]
    assert twice == []
    assert recovery.strays([], held + held)[1] == ["Deployment/ns/server"]


def test_the_rollout_promise_is_replicas_less_max_unavailable() -> None:
    def deployment(replicas: int, unavailable: int) -> dict[str, Any]:
        rolling = {"maxSurge": 0, "maxUnavailable": unavailable}
        return {"spec": {"replicas": replicas, "strategy": {"rollingUpdate": rolling}}}

    assert cluster_faults._promised(deployment(4, 1)) == 3
    assert cluster_faults._promised(deployment(1, 1)) == 0
    assert cluster_faults._promised(deployment(2, 3)) == 0


def test_a_pod_with_a_missing_image_is_kept_unready_and_only_such_a_pod() -> None:
    ready: dict[str, Any] = {
        "metadata": {"name": "pod-ready"},
        "spec": {"selector": {"matchExpressions": [{"key": ".status.phase", "operator": "In", "values": ["Pending"]}]}},
    }
    stages = kwok.with_missing_images([ready])
    by_name = {s["metadata"]["name"]: s for s in stages}
    assert set(by_name) == {"pod-ready", "pod-image-not-found"}
    assert ready["spec"]["selector"]["matchExpressions"][-1]["key"] == ".status.phase"  # the input is not changed
    ready_expr = by_name["pod-ready"]["spec"]["selector"]["matchExpressions"][-1]
    missing_expr = by_name["pod-image-not-found"]["spec"]["selector"]["matchExpressions"][-1]
    # One query, complementary operators: a pod matches exactly one of the two stages.
    assert ready_expr["key"] == missing_expr["key"]
    assert kwok.MISSING_IMAGE_SUFFIX in ready_expr["key"]
    assert (ready_expr["operator"], missing_expr["operator"]) == ("DoesNotExist", "Exists")
    template = by_name["pod-image-not-found"]["spec"]["next"]["statusTemplate"]
    assert "reason: ImagePullBackOff" in template
    assert "type: Ready, status: 'False'" in template
    assert kwok.with_missing_images([]) == []  # no pod-ready stage, nothing to split


def test_a_charts_objects_are_applied_with_force_and_keep_their_annotations() -> None:
    deployment: dict[str, Any] = {"kind": "Deployment", "metadata": {"name": "epp", "annotations": {"a": "b"}}}
    args = pulumi.ResourceTransformArgs(
        True, "kubernetes:apps/v1:Deployment", "epp", deployment, pulumi.ResourceOptions()
    )
    result = force_field_ownership(args)
    assert result is not None
    props: dict[str, Any] = dict(result.props)
    assert props["metadata"]["annotations"] == {"a": "b", PATCH_FORCE_ANNOTATION: "true"}
    assert deployment["metadata"]["annotations"] == {"a": "b"}
    chart = pulumi.ResourceTransformArgs(True, "kubernetes:helm.sh/v4:Chart", "c", {}, pulumi.ResourceOptions())
    assert force_field_ownership(chart) is None


FAULTS_REFUSED = [
    (["gke-h100-lustre", "--all"], "PRESET = 'gke-h100-lustre': --all runs every preset"),
    (["dev", "--stop", "dev"], "PRESET = 'dev': --stop stops the cluster a --keep run left"),
    (["--faults"], "--faults: name the presets"),
    (["--faults", "--layers", "dev"], "--faults: name the presets"),
    (["--faults", "dev", "--keep"], "--keep: a faults run destroys"),
    (["--faults", "dev", "--fault", "nope"], "--fault = 'nope': allowed: sigint-crds"),
    (["dev", "--fault", "never-ready"], "--fault = 'never-ready': only with --faults"),
]


@pytest.mark.parametrize(("argv", "message"), FAULTS_REFUSED)
def test_faults_and_mode_arguments_are_refused_in_one_line_before_any_build(
    argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import e2e.__main__ as e2e_main
    from e2e import tools

    def no_build(*_: object, **__: object) -> None:
        raise AssertionError("the build started before the arguments were checked")

    monkeypatch.setattr(tools, "ensure_all", no_build)
    assert e2e_main.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}"), err
    assert err.count("\n") == 1


# The Diagnostics of the measured never-ready run (pulumi 3.274, provider 4.25), the stack's block shortened.
NEVER_READY_OUTPUT = """Updating (e2e):
Diagnostics:
  pulumi:pulumi:Stack (llmd-e2e):
    warning: Attempting to deploy or update resources with 1 pending operations from previous deployment.
    error: update failed

  kubernetes:apps/v1:Deployment (llmd-model-server-gpu-vllm-decode):
    error: 3 errors occurred:
    \t* the Kubernetes API server reported that "llm-d-tiered-prefix-cache/gpu-vllm-decode" failed to fully \
initialize or become live: 'gpu-vllm-decode' timed out waiting to be Ready
    \t* Minimum number of Pods to consider the application live was not attained
    \t* [Pod llm-d-tiered-prefix-cache/gpu-vllm-decode-8649549557-62bgz]: [ImagePullBackOff] Back-off pulling \
image "docker.io/vllm/vllm-openai:v0.26.1-e2e-not-found": not found

  kubernetes:core/v1:Service (llmd-router-svc):
    warning: a warning only

Outputs:
    namespace     : "llm-d-tiered-prefix-cache"
"""


def test_the_failed_resources_are_the_diagnostic_blocks_with_an_error_but_the_stacks() -> None:
    failing = recovery.failed_resources(NEVER_READY_OUTPUT)
    assert list(failing) == ["llmd-model-server-gpu-vllm-decode"]
    message = " ".join(failing["llmd-model-server-gpu-vllm-decode"])
    assert "[ImagePullBackOff]" in message and "timed out waiting to be Ready" in message
    assert recovery.failed_resources("Resources:\n    3 unchanged\n") == {}


def test_the_stack_applies_each_object_it_owns_whole_with_force_and_a_patch_or_a_chart_without() -> None:
    from stacks.deploy.protection import lifecycle_transform

    transform = lifecycle_transform(protect=True)

    def annotations(resource_type: str) -> dict[str, str] | None:
        args = pulumi.ResourceTransformArgs(
            True, resource_type, "x", {"metadata": {"name": "x"}}, pulumi.ResourceOptions()
        )
        result = transform(args)
        if result is None:
            return None
        props: dict[str, Any] = dict(result.props)
        return dict(props["metadata"].get("annotations") or {})

    assert annotations("kubernetes:apps/v1:Deployment") == {PATCH_FORCE_ANNOTATION: "true"}
    assert annotations("kubernetes:core/v1:NamespacePatch") is None
    assert annotations("kubernetes:helm.sh/v4:Chart") is None
    assert annotations("gcp:lustre/instance:Instance") in (None, {})  # protected, not a Kubernetes object


def test_every_object_of_a_render_carries_the_force_annotation() -> None:
    import yaml

    from tests.helpers import rendered

    manifests = [m for m in yaml.safe_load_all(rendered("dev").manifests) if m]
    assert manifests and all(
        (m.get("metadata") or {}).get("annotations", {}).get(PATCH_FORCE_ANNOTATION) == "true" for m in manifests
    )


class CannedCluster:
    """Answers `kubectl get KIND ... -o json` with canned objects, by kind."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(list(args), 0, json.dumps(self.objects[args[1]]), "")


def _deployment(generation: int, observed: int, counts: dict[str, int], revision: str = "3") -> dict[str, Any]:
    return {
        "metadata": {"generation": generation, "annotations": {rollout_state.REVISION: revision}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "m"}}},
        "status": {
            "observedGeneration": observed,
            "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}],
            **counts,
        },
    }


def _pod(terminating: bool = False, waiting: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"deletionTimestamp": "2026-12-05T00:00:00Z"} if terminating else {}
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {"metadata": meta, "status": {"containerStatuses": [{"state": state}]}}


ALL_TWO = {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}


def test_a_rollout_is_read_as_the_awaiter_would_and_settles_only_when_quiet() -> None:
    """Revision, conditions, the ReplicaSets by revision and the pods' waiting reasons are read off the cluster;
    settled means the controller saw the change, every replica is new and available, nothing is terminating."""
    sets = {"items": [{"metadata": {"annotations": {rollout_state.REVISION: "3"}}, "spec": {"replicas": 0}}]}
    cluster = CannedCluster(
        {
            "deployment": _deployment(5, 5, ALL_TWO),
            "replicasets": sets,
            "pods": {"items": [_pod(), _pod(waiting="ImagePullBackOff")]},
        }
    )
    state = rollout_state.rollout(cast(kwok.Cluster, cluster), "ns", "m")
    assert state["revision"] == "3"
    assert state["conditions"] == {"Progressing": "True/NewReplicaSetAvailable"}
    assert state["replicaSets"] == {"3": [0, 0]}
    assert state["waiting"] == ["ImagePullBackOff"]
    assert rollout_state.settled(state)
    assert not rollout_state.settled({**state, "observedGeneration": 4})
    assert not rollout_state.settled({**state, "terminating": 1})
    assert not rollout_state.settled({**state, "counts": {**ALL_TWO, "updatedReplicas": 1}})
    assert not rollout_state.settled({**state, "counts": {**ALL_TWO, "availableReplicas": 1}})


def test_waiting_for_a_rollout_that_never_settles_is_refused_with_its_state() -> None:
    cluster = CannedCluster(
        {"deployment": _deployment(5, 4, ALL_TWO), "replicasets": {"items": []}, "pods": {"items": [_pod(True)]}}
    )
    with pytest.raises(StepError, match=r'm did not settle in 0 s: .*"observedGeneration": 4.*"terminating": 1'):
        rollout_state.wait_settled(cast(kwok.Cluster, cluster), "ns", "m", limit_s=0)


def test_the_engine_lines_about_one_resource_are_its_last_few() -> None:
    output = "\n".join(f"  ~ kubernetes:apps/v1:Deployment llmd-model-server-m updating ({i}s)" for i in range(9))
    lines = rollout_state.engine_lines(output + "\n  + other created", "llmd-model-server-m", last=2)
    assert lines == [
        "~ kubernetes:apps/v1:Deployment llmd-model-server-m updating (7s)",
        "~ kubernetes:apps/v1:Deployment llmd-model-server-m updating (8s)",
    ]
