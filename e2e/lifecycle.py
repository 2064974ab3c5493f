"""One preset through the real engine on a local control plane: preview, up, no-change preview,
the engine's plan against the change plan, destroy under protect, the policy pack.

Each step prints one line (`ok` or `FAIL`) and its elapsed time; a failed step stops the preset
with the engine's own output. The work directory keeps the logs (engine.log, the cluster's).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from components.specs import tier_evictor
from e2e import deletion_cost, ownership, pickers
from e2e.changes import CHANGES, Change, apply_change
from e2e.engine import Engine
from e2e.kwok import Cluster, ClusterError
from e2e.policy_step import check_pack
from e2e.session import new_session, start
from e2e.steps import Report, StepError, check_live_matches, live_object, timed

IMAGE_CHANGE = str(next(c.value for c in CHANGES if c.name == "image"))  # a template change that rolls


def run_preset(
    preset: str,
    workdir: Path,
    bins: dict[str, Path],
    changes: bool = True,
    policy: bool = True,
    keep: bool = False,
    overrides: list[str] | None = None,
) -> Report:
    session = new_session(preset, workdir, bins, overrides)
    report, cluster, engine, project, state = (
        session.report,
        session.cluster,
        session.engine,
        session.project,
        session.state,
    )
    try:
        start(session, bins)

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
        precise = pickers.precise_router(state["render"]["resources"])
        if precise is not None:  # the precise presets: active-active pickers, each with its tokenizer sidecar
            timed(report, "endpoint pickers as rendered", lambda: pickers.check_pickers(cluster, *precise))
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
        if deletion_cost.annotator_of(state["render"]["objects"]) is not None:  # autoscaling.scale_in: cache-value
            timed(
                report,
                "a scale-in removes the lowest-cost pod (the cache annotator, the ReplicaSet controller's choice)",
                lambda: deletion_cost.check_scale_in(cluster, state["render"]["objects"], workdir),
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
            timed(report, "destroy under protect", lambda: destroy_under_protect(engine, cluster, state))
    except (StepError, ClusterError):
        pass
    finally:
        session.close(keep)
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


def protected_resources(resources_json: str) -> list[str]:
    return [f"{r['type']} {r['name']}" for r in json.loads(resources_json) if (r.get("options") or {}).get("protect")]


def destroy_under_protect(engine: Engine, cluster: Cluster, state: dict[str, Any]) -> str:
    """`pulumi destroy` stops on protected state; with `llmd:protect` false it removes everything."""
    protected = protected_resources(state["render"]["resources"])
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
