"""One preset through the real engine on a local control plane: preview, up, no-change preview,
the engine's plan against the change plan, destroy under protect, the policy pack.

Each step prints one line (`ok` or `FAIL`) and its elapsed time; a failed step stops the preset
with the engine's own output. The work directory keeps the logs (engine.log, the cluster's).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e import compare, nodes
from e2e.engine import REPO, Engine, copy_project, language_host_shim, python
from e2e.kwok import Cluster, ClusterError
from stacks.review.diff import change_plan

FIXTURES = REPO / "tests" / "fixtures" / "upstream"
ROUTER_CHART = FIXTURES / "charts" / "llm-d-router-standalone-v0.10.0.tgz"
ROUTER_CHART_VERSION = "v0.10.0"
GAIE_CRDS = (
    FIXTURES
    / "schemas"
    / "gateway-api-inference-extension"
    / "v1.6.0"
    / "inference.networking.k8s.io_inferencepools.yaml",
    FIXTURES
    / "schemas"
    / "gateway-api-inference-extension"
    / "v1.6.0"
    / "inference.networking.x-k8s.io_inferencepoolimports.yaml",
)
# CRDs a preset's objects need that the stack does not apply itself, by the API group of its objects.
_CRD_FIXTURES = {
    "monitoring.coreos.com": FIXTURES / "schemas" / "prometheus-operator",
    "monitoring.googleapis.com": FIXTURES / "schemas" / "gke-managed-prometheus",
    "leaderworkerset.x-k8s.io": FIXTURES / "schemas" / "lws",
}
HF_TOKEN = "hf_e2e_placeholder_not_a_token"


class StepError(RuntimeError):
    pass


@dataclass
class Change:
    """A config change and what the run checks after it."""

    name: str
    key: str
    value: str | None  # None: remove the key
    apply: bool = True  # also `pulumi up` it (the moves and the state changes are previewed only)
    needs_claim: bool = False  # only where the stack has a PersistentVolumeClaim


CHANGES = (
    Change("tier size", "llmd:cache.tier.cpu", "6GiB"),
    Change("replicas", "llmd:cache.replicas", "+1"),  # one more than the stack runs
    Change("image", "llmd:cache.image", "docker.io/vllm/vllm-openai:v0.26.1"),
    Change("model", "llmd:cache.model", "Qwen/Qwen3-8B"),
    Change("release name", "llmd:router.release", "tpc-renamed", apply=False),
    Change("namespace", "llmd:namespace", "llm-d-e2e-moved", apply=False),
    Change("storage size", "llmd:storage.size", "18000Gi", apply=False, needs_claim=True),
    Change("protect off", "llmd:protect", "false", apply=False, needs_claim=True),
)


@dataclass
class Report:
    preset: str
    lines: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    failed: bool = False

    def say(self, line: str) -> None:
        text = f"[e2e {self.preset}] {line}"
        self.lines.append(text)
        print(text, flush=True)


def _timed(report: Report, label: str, action: Callable[[], str | None]) -> None:
    started = time.monotonic()
    try:
        detail = action()
    except (StepError, ClusterError) as error:
        report.say(f"FAIL {label} ({time.monotonic() - started:.0f} s): {error}")
        report.failed = True
        raise
    report.say(f"ok   {label} ({time.monotonic() - started:.0f} s){': ' + detail if detail else ''}")


def _render(project: Path, stack: str, out: Path) -> dict[str, Any]:
    """The offline render of the very stack file the engine runs, in the project copy."""
    result = subprocess.run(
        [python(), "-m", "stacks", "render", stack, "--out", str(out)], cwd=project, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise StepError(f"offline render: {(result.stderr or result.stdout).strip()[-400:]}")
    objects = [o for o in yaml.safe_load_all((out / "manifests.yaml").read_text()) if o]
    return {"objects": objects, "resources": (out / "resources.json").read_text(), "dir": out}


def _crds_for(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups = {o.get("apiVersion", "").split("/")[0] for o in objects}
    docs: list[dict[str, Any]] = []
    for group, folder in _CRD_FIXTURES.items():
        if group in groups:
            for path in sorted(folder.glob("*.yaml")):
                docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _live(cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj.get("metadata", {})
    kind = obj["kind"]
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    resource = f"{kind}.{group}" if group else kind
    scope = ["-n", meta["namespace"]] if meta.get("namespace") else []
    out = cluster.kubectl("get", resource, meta["name"], *scope, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def check_live_matches(cluster: Cluster, objects: list[dict[str, Any]]) -> str:
    problems = []
    for obj in objects:
        live = _live(cluster, obj)
        name = f"{obj['kind']}/{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        if live is None:
            problems.append(f"{name}: not on the API server")
            continue
        want = dict(obj)
        if obj["kind"] == "Secret":
            want.pop("stringData", None)  # the API server keeps it as data
        problems += [f"{name}: {p}" for p in compare.missing_fields(want, live)]
    if problems:
        raise StepError(f"{len(problems)} field(s) differ from the render:\n  " + "\n  ".join(problems[:20]))
    return f"{len(objects)} objects hold every field the render sets"


def _served_replicas(objects: list[dict[str, Any]]) -> int:
    """The model servers' replica count in a render (their Deployments or LeaderWorkerSets)."""
    counts = [
        int(o["spec"].get("replicas", 1))
        for o in objects
        if o["kind"] in ("Deployment", "LeaderWorkerSet") and "llm-d.ai/role" in o["metadata"].get("labels", {})
    ]
    return max(counts, default=1)


def _uids(cluster: Cluster, namespace: str) -> dict[tuple[str, str], str]:
    uids = {}
    for kind in (
        "deployments",
        "services",
        "configmaps",
        "secrets",
        "persistentvolumeclaims",
        "jobs",
        "daemonsets",
        "statefulsets",
        "networkpolicies",
        "serviceaccounts",
    ):
        for obj in cluster.objects(kind, namespace):
            uids[(obj["kind"], obj["metadata"]["name"])] = obj["metadata"]["uid"]
    return uids


def cluster_name(preset: str) -> str:
    return f"llmd-{preset}"[:40].rstrip("-")


def run_preset(
    preset: str,
    workdir: Path,
    bins: dict[str, Path],
    changes: bool = True,
    policy: bool = True,
    keep: bool = False,
    overrides: list[str] | None = None,
) -> Report:
    report = Report(preset)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    cluster = Cluster(cluster_name(preset), workdir / "cluster", bins)
    shim_dir = workdir / "bin"
    language_host_shim(shim_dir, bins["pulumi"] / "pulumi-language-python-exec")
    project = copy_project(workdir / "project")
    engine = Engine(project, workdir, [shim_dir, bins["pulumi"], bins["kubernetes-provider"]])
    gaie = workdir / "gaie-crds.yaml"
    gaie.write_text("".join("---\n" + p.read_text() for p in GAIE_CRDS))
    config = {
        "llmd:preset": preset,
        "llmd:cluster.kubeconfig": str(cluster.kubeconfig),
        "llmd:router.chart_file": str(ROUTER_CHART),
        "llmd:router.version": ROUTER_CHART_VERSION,
        "llmd:router.gaie_crds_file": str(gaie),
        **{f"llmd:{k}": v for k, _, v in (o.partition("=") for o in overrides or [])},
    }
    state: dict[str, Any] = {}
    try:
        _timed(
            report,
            "stack init (local backend, passphrase secrets)",
            lambda: engine.init(config, {"llmd:hfToken": HF_TOKEN}),
        )

        def render() -> str:
            state["render"] = _render(project, engine.stack, workdir / "render")
            return f"{len(state['render']['objects'])} objects"

        _timed(report, "offline render of the same stack", render)

        def control_plane() -> str:
            cluster.create()
            from stacks.config import loading

            state["pools"] = loading.load_named(preset, list(overrides or []))
            shapes = nodes.node_shapes(state["pools"], state["render"]["objects"])
            node_docs = nodes.node_objects(shapes)
            cluster.apply(node_docs)
            cluster.wait_nodes_ready(len(node_docs))
            crds = _crds_for(state["render"]["objects"])
            cluster.apply(crds, server_side=True)
            pools = ", ".join(f"{s.name_prefix} x{s.count}" for s in shapes)
            return f"kwok, {len(node_docs)} nodes ({pools}), {len(crds)} CRDs"

        _timed(report, "local control plane", control_plane)

        def preview() -> str:
            result = engine.run("preview", "--diff")
            if not result.ok:
                raise StepError(result.tail())
            return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""

        _timed(report, "pulumi preview", preview)

        def up() -> str:
            result = engine.run("up", "--yes", "--skip-preview")
            if not result.ok:
                raise StepError(result.tail(40))
            outputs = engine.outputs()
            missing = [k for k in ("namespace", "routerEndpoint", "cacheSizing") if k not in outputs]
            if missing:
                raise StepError(f"stack outputs missing: {', '.join(missing)}")
            return f"outputs {', '.join(sorted(outputs))}"

        _timed(report, "pulumi up", up)
        _timed(report, "live objects match the render", lambda: check_live_matches(cluster, state["render"]["objects"]))

        def no_change() -> str:
            result = engine.run("preview", "--expect-no-changes", "--diff")
            if not result.ok:
                raise StepError(result.tail(40))
            return "no perpetual diff"

        _timed(report, "pulumi preview --expect-no-changes", no_change)

        if changes:
            has_claim = any(o["kind"] == "PersistentVolumeClaim" for o in state["render"]["objects"])
            for change in (c for c in CHANGES if has_claim or not c.needs_claim):

                def step(c: Change = change) -> str:
                    return _change(engine, cluster, project, workdir, state, c, report)

                _timed(report, f"change: {change.name}", step)
        if policy:
            _timed(report, "policy pack passes", lambda: _policy(engine, project, expect_pass=True))
        if not keep:
            _timed(report, "destroy under protect", lambda: _destroy(engine, cluster, state))
    except (StepError, ClusterError):
        pass
    finally:
        if keep:
            report.say(f"kept: kubectl --kubeconfig {cluster.kubeconfig}; stop it with `./run e2e --stop {preset}`")
        else:
            cluster.delete()
    return report


def _change(
    engine: Engine,
    cluster: Cluster,
    project: Path,
    workdir: Path,
    state: dict[str, Any],
    change: Change,
    report: Report,
) -> str:
    before = state["render"]
    value = change.value
    if value is not None and value.startswith("+"):
        value = str(_served_replicas(before["objects"]) + int(value[1:]))
    if value is None:
        engine.remove_config(change.key)
    else:
        engine.set_config(change.key, value)
    try:
        after = _render(project, engine.stack, workdir / f"render-{change.name.replace(' ', '-')}")
    except StepError as rejection:
        # The config checks refuse it (the pools cannot hold it): the engine must stop on the same line.
        line = str(rejection).removeprefix("offline render: ").strip().splitlines()[-1]
        result = engine.run("preview")
        engine.remove_config(change.key)
        if result.ok or line.removeprefix("error: ") not in result.stdout + result.stderr:
            raise StepError(f"refused offline ({line}) but not by the engine:\n{result.tail(20)}") from None
        return f"{change.key}={value} refused by the config checks, offline and under the engine: {line}"
    planned = change_plan(before["resources"], after["resources"])
    refused = [c for c in planned if c.kind == "replace" and "`protect` refuses" in c.why]
    if refused:
        result = engine.run("preview")
        engine.remove_config(change.key)
        if result.ok or "protect" not in result.stdout + result.stderr:
            raise StepError(f"the change plan says protect stops it; the engine did not:\n{result.tail(20)}")
        names = ", ".join(c.name for c in refused)
        return f"the change plan says `protect` stops it ({names}); the engine's preview stops on protection too"
    steps = engine.preview_steps()
    disagreements = compare.compare_plans(steps, planned)
    for d in disagreements:
        report.disagreements.append(f"{change.name}: {d.line()}")
    summary = ", ".join(sorted({f"{c.kind} {c.name}" for c in planned}))[:300]
    if disagreements:
        raise StepError(f"{len(disagreements)} disagreement(s):\n  " + "\n  ".join(d.line() for d in disagreements))
    stalls = [c.name for c in planned if "may stall" in c.why]
    if stalls:  # the change plan warns the rollout cannot finish here: the run does not wait it out
        engine.remove_config(change.key)
        return f"plans agree ({summary}); not applied: the change plan says the rollout may stall ({', '.join(stalls)})"
    if not change.apply:  # a move the run does not make: the key goes back to unset
        engine.remove_config(change.key)
        return f"plans agree ({summary}); previewed only"
    # Where the stack describes no pool, its pods' nodes are the cluster's: more pods get more nodes.
    cluster.apply(nodes.node_objects(nodes.node_shapes(state["pools"], after["objects"])))
    namespace = before["objects"][0]["metadata"].get("namespace") or "llm-d-tiered-prefix-cache"
    uids = _uids(cluster, namespace)
    result = engine.run("up", "--yes", "--skip-preview")
    if not result.ok:
        raise StepError(result.tail(40))
    after_uids = _uids(cluster, namespace)
    allowed = compare.replaced_objects(planned, after["resources"])
    replaced_unplanned = sorted(
        k for k, uid in uids.items() if k in after_uids and after_uids[k] != uid and k not in allowed
    )
    if replaced_unplanned:
        raise StepError(f"replaced though the change plan calls no replacement: {replaced_unplanned}")
    state["render"] = after
    return f"plans agree ({summary}); applied"


SEEDED_VIOLATION = ("llmd:cache.image", "docker.io/vllm/vllm-openai:latest", "images-pinned")


def _policy(engine: Engine, project: Path, expect_pass: bool) -> str:
    """The pack through the engine's analyzer: the stack passes; a floating image tag fails the preview."""
    pack = str(project / "policies")
    # The e2e deploys the fixture chart from disk, which the pack refuses unless told (as an air-gapped user would).
    pack_config = engine.workdir / "policy-config.json"
    pack_config.write_text(json.dumps({"chart-registries": {"allowLocalCharts": True}}))
    args = ("--policy-pack", pack, "--policy-pack-config", str(pack_config))
    result = engine.run("preview", *args)
    if not result.ok:
        raise StepError("the unchanged stack fails its policy pack:\n" + result.tail(40))
    key, value, rule = SEEDED_VIOLATION
    engine.set_config(key, value)
    try:
        seeded = engine.run("preview", *args)
    finally:
        engine.remove_config(key)
    text = seeded.stdout + seeded.stderr
    if seeded.ok or rule not in text or "floating tag" not in text:
        raise StepError(f"a floating image tag did not fail the preview with rule {rule}:\n" + seeded.tail(30))
    return f"passes; `{key}={value}` fails it with {rule} (mandatory)"


def _protected(resources_json: str) -> list[str]:
    return [f"{r['type']} {r['name']}" for r in json.loads(resources_json) if (r.get("options") or {}).get("protect")]


def _destroy(engine: Engine, cluster: Cluster, state: dict[str, Any]) -> str:
    """`pulumi destroy` stops on protected state; with `llmd:protect` false it removes everything."""
    protected = _protected(state["render"]["resources"])
    detail = "nothing protected in this stack"
    if protected:
        result = engine.run("destroy", "--yes", "--skip-preview")
        if result.ok:
            raise StepError(f"destroy went through protected state: {', '.join(protected)}")
        if "protect" not in (result.stdout + result.stderr):
            raise StepError("destroy failed, but not on protection:\n" + result.tail(30))
        engine.set_config("llmd:protect", "false")
        result = engine.run("up", "--yes", "--skip-preview")
        if not result.ok:
            raise StepError("unprotecting `pulumi up` failed:\n" + result.tail(30))
        detail = f"stopped on {len(protected)} protected ({', '.join(protected)}), then removed with protect off"
    result = engine.run("destroy", "--yes", "--skip-preview")
    if not result.ok:
        raise StepError(result.tail(40))
    deadline = time.monotonic() + 120
    remaining: list[str] = []
    while time.monotonic() < deadline:
        remaining = [
            f"{o['kind']}/{o['metadata']['name']}" for o in state["render"]["objects"] if _live(cluster, o) is not None
        ]
        if not remaining:
            break
        time.sleep(2)
    if remaining:
        raise StepError(f"left on the API server after destroy: {', '.join(remaining[:10])}")
    if engine.state():
        raise StepError("the stack's state still holds resources after destroy")
    return detail + "; nothing of the stack remains on the API server"
