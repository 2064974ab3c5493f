"""One preset through the real engine on a local control plane: preview, up, no-change preview,
the engine's plan against the change plan, destroy under protect, the policy pack.

Each step prints one line (`ok` or `FAIL`) and its elapsed time; a failed step stops the preset
with the engine's own output. The work directory keeps the logs (engine.log, the cluster's).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from components.catalog import versions
from components.specs import tier_evictor
from e2e import lws, nodes, ownership
from e2e.changes import CHANGES, Change, apply_change
from e2e.engine import REPO, Engine, copy_project, language_host_shim
from e2e.kwok import Cluster, ClusterError
from e2e.policy_step import check_pack
from e2e.steps import Report, StepError, check_live_matches, live_object, render_stack, timed

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
    "keda.sh": FIXTURES / "schemas" / "keda" / f"v{versions.KEDA_VERSION}",
}
HF_TOKEN = "hf_e2e_placeholder_not_a_token"
IMAGE_CHANGE = str(next(c.value for c in CHANGES if c.name == "image"))  # a template change that rolls


def _crds_for(objects: list[dict[str, Any]], served: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The fixture CRDs of the groups the objects use, but those a controller here brings (`served`)."""
    groups = {o.get("apiVersion", "").split("/")[0] for o in objects} - served
    docs: list[dict[str, Any]] = []
    for group, folder in _CRD_FIXTURES.items():
        if group in groups:
            for path in sorted(folder.glob("*.yaml")):
                docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


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
        timed(
            report,
            "stack init (local backend, passphrase secrets)",
            lambda: engine.init(config, {"llmd:hfToken": HF_TOKEN}),
        )

        def render() -> str:
            state["render"] = render_stack(project, engine.stack, workdir / "render")
            return f"{len(state['render']['objects'])} objects"

        timed(report, "offline render of the same stack", render)

        def control_plane() -> str:
            cluster.create()
            from stacks.config import loading

            state["pools"] = loading.load_named(preset, list(overrides or []))
            shapes = nodes.node_shapes(state["pools"], state["render"]["objects"])
            node_docs = nodes.node_objects(shapes)
            cluster.apply(node_docs)
            cluster.wait_nodes_ready(len(node_docs))
            devices = nodes.dra_objects(shapes)
            cluster.apply(devices, server_side=True)
            cluster.apply(nodes.runtime_classes(state["render"]["objects"]), server_side=True)
            objects = state["render"]["objects"]
            needs_lws = any(o["kind"] == "LeaderWorkerSet" for o in objects)
            crds = _crds_for(objects, frozenset({lws.GROUP}) if needs_lws else frozenset())
            cluster.apply(crds, server_side=True)
            pools = ", ".join(f"{s.name_prefix} x{s.count}" for s in shapes)
            slices = state["dra"] = sum(d["kind"] == "ResourceSlice" for d in devices)
            detail = f"kwok, {len(node_docs)} nodes ({pools}), {len(crds)} CRDs" + (
                f", {slices} ResourceSlices (DRA)" if slices else ""
            )
            if needs_lws:
                if "lws" not in bins:
                    raise StepError(
                        "its LeaderWorkerSet needs the LWS controller, built with `--all` (or by naming it)"
                    )
                controller = lws.Controller(bins["lws"] / "lws-controller", workdir / "lws", cluster.kubeconfig)
                state["lws"] = controller
                detail += "; " + controller.start(lambda docs, side: cluster.apply(docs, server_side=side))
            return detail

        timed(report, "local control plane", control_plane)

        def preview() -> str:
            result = engine.run("preview", "--diff")
            if not result.ok:
                raise StepError(result.tail())
            return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""

        timed(report, "pulumi preview", preview)

        def up() -> str:
            result = engine.run("up", "--yes", "--skip-preview")
            if not result.ok:
                raise StepError(result.tail(40))
            outputs = engine.outputs()
            missing = [k for k in ("namespace", "routerEndpoint", "cacheSizing") if k not in outputs]
            if missing:
                raise StepError(f"stack outputs missing: {', '.join(missing)}")
            return f"outputs {', '.join(sorted(outputs))}"

        timed(report, "pulumi up", up)
        timed(report, "live objects match the render", lambda: check_live_matches(cluster, state["render"]["objects"]))
        evictor = _evictor(state["render"]["objects"])
        if evictor is not None:  # every filesystem-tier preset: the shared tier's evictor runs beside its claim
            timed(report, "the shared tier's evictor is ready", lambda: _check_ready(cluster, evictor))
        if state.get("dra"):
            timed(report, "DRA claims allocated", lambda: _check_claims(cluster))

        def no_change() -> str:
            result = engine.run("preview", "--expect-no-changes", "--diff")
            if not result.ok:
                raise StepError(result.tail(40))
            return "no perpetual diff"

        timed(report, "pulumi preview --expect-no-changes", no_change)
        if any(o["kind"] == "ScaledObject" for o in state["render"]["objects"]):
            timed(
                report,
                "KEDA owns the replicas (scale subresource, then a rollout)",
                lambda: ownership.check_keda_owns_replicas(engine, cluster, state["render"]["objects"], IMAGE_CHANGE),
            )

        if changes:
            has_claim = any(o["kind"] == "PersistentVolumeClaim" for o in state["render"]["objects"])
            for change in (c for c in CHANGES if has_claim or not c.needs_claim):

                def step(c: Change = change) -> str:
                    return apply_change(engine, cluster, project, workdir, state, c, report)

                timed(report, f"change: {change.name}", step)
        if policy:
            timed(report, "policy pack passes", lambda: check_pack(engine, project, state["render"]["resources"]))
        if not keep:
            timed(report, "destroy under protect", lambda: _destroy(engine, cluster, state))
    except (StepError, ClusterError):
        pass
    finally:
        if keep:
            if "lws" in state:
                report.say(f"kept: lws-controller, pid {state['lws'].pid()}")
            report.say(f"kept: kubectl --kubeconfig {cluster.kubeconfig}; stop it with `./run e2e --stop {preset}`")
        else:
            if "lws" in state:
                state["lws"].stop()
            cluster.delete()
    return report


def _check_claims(cluster: Cluster) -> str:
    """Every ResourceClaim the pods hold, allocated by the scheduler from the published slices."""
    claims = cluster.objects("resourceclaims.resource.k8s.io")
    if not claims:
        raise StepError("no ResourceClaim on the API server, though the pods claim devices")
    pending = [c["metadata"]["name"] for c in claims if not (c.get("status") or {}).get("allocation")]
    if pending:
        raise StepError(f"ResourceClaims not allocated: {', '.join(pending)}")
    results = [r for c in claims for r in c["status"]["allocation"]["devices"].get("results", [])]
    pools = sorted({r.get("pool", "") for r in results})  # a slice's pool is named after its node
    return f"{len(claims)} claim(s), {len(results)} devices allocated from {', '.join(pools)}"


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
            f"{o['kind']}/{o['metadata']['name']}"
            for o in state["render"]["objects"]
            if live_object(cluster, o) is not None
        ]
        if not remaining:
            break
        time.sleep(2)
    if remaining:
        raise StepError(f"left on the API server after destroy: {', '.join(remaining[:10])}")
    if engine.state():
        raise StepError("the stack's state still holds resources after destroy")
    return detail + "; nothing of the stack remains on the API server"


def _evictor(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == tier_evictor.NAME), None)


def _check_ready(cluster: Cluster, deployment: dict[str, Any]) -> str:
    """Its pod scheduled and ready (KWOK runs no container: the pod's presence, placement and readiness)."""
    live = live_object(cluster, deployment) or {}
    ready = int((live.get("status") or {}).get("readyReplicas") or 0)
    wanted = int(deployment["spec"]["replicas"])
    if ready < wanted:
        raise StepError(f"Deployment {deployment['metadata']['name']}: {ready} of {wanted} replicas ready")
    return f"Deployment {deployment['metadata']['name']}: {ready} of {wanted} ready"
