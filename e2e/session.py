"""A preset's stack on a fresh local control plane, ready for steps: the stack initialised on the local
backend, the offline render of the same stack file, and the control plane with nodes shaped like the
stack, its devices and the CRDs the stack expects from the cluster. `e2e.lifecycle` and `e2e.faults` both
start here."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.catalog import versions
from e2e import lws, nodes
from e2e.engine import REPO, Engine, copy_project, language_host_shim
from e2e.kwok import Cluster
from e2e.steps import Report, StepError, render_stack, timed

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


def crds_for(objects: list[dict[str, Any]], served: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
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


@dataclass
class Session:
    """One preset's stack, its project copy, its engine and its control plane; `state` holds what the steps
    learn (the render, the pools, the LWS controller)."""

    preset: str
    workdir: Path
    report: Report
    cluster: Cluster
    engine: Engine
    project: Path
    overrides: list[str]
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def objects(self) -> list[dict[str, Any]]:
        return list(self.state["render"]["objects"])

    def close(self, keep: bool) -> None:
        if keep:
            if "lws" in self.state:
                self.report.say(f"kept: lws-controller, pid {self.state['lws'].pid()}")
            self.report.say(
                f"kept: kubectl --kubeconfig {self.cluster.kubeconfig}; stop it with `./run e2e --stop {self.preset}`"
            )
            return
        if "lws" in self.state:
            self.state["lws"].stop()
        self.cluster.delete()


def new_session(preset: str, workdir: Path, bins: dict[str, Path], overrides: list[str] | None = None) -> Session:
    """The work directory emptied, the project copied and the engine set up; nothing started yet."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    cluster = Cluster(cluster_name(preset), workdir / "cluster", bins)
    shim_dir = workdir / "bin"
    language_host_shim(shim_dir, bins["pulumi"] / "pulumi-language-python-exec")
    project = copy_project(workdir / "project")
    engine = Engine(project, workdir, [shim_dir, bins["pulumi"], bins["kubernetes-provider"]])
    return Session(preset, workdir, Report(preset), cluster, engine, project, list(overrides or []))


def stack_config(session: Session) -> dict[str, str]:
    gaie = session.workdir / "gaie-crds.yaml"
    gaie.write_text("".join("---\n" + p.read_text() for p in GAIE_CRDS))
    return {
        "llmd:preset": session.preset,
        "llmd:cluster.kubeconfig": str(session.cluster.kubeconfig),
        "llmd:router.chart_file": str(ROUTER_CHART),
        "llmd:router.version": ROUTER_CHART_VERSION,
        "llmd:router.gaie_crds_file": str(gaie),
        **{f"llmd:{k}": v for k, _, v in (o.partition("=") for o in session.overrides)},
    }


def start(session: Session, bins: dict[str, Path]) -> None:
    """The three first steps of every run: stack init, the offline render, the control plane (each a timed
    line of the report; a failure raises `StepError` or `ClusterError`)."""
    engine, state, report = session.engine, session.state, session.report
    timed(
        report,
        "stack init (local backend, passphrase secrets)",
        lambda: engine.init(stack_config(session), {"llmd:hfToken": HF_TOKEN}),
    )

    def render() -> str:
        state["render"] = render_stack(session.project, engine.stack, session.workdir / "render")
        return f"{len(state['render']['objects'])} objects"

    timed(report, "offline render of the same stack", render)
    timed(report, "local control plane", lambda: _control_plane(session, bins))


def _control_plane(session: Session, bins: dict[str, Path]) -> str:
    from stacks.config import loading

    cluster, state = session.cluster, session.state
    cluster.create()
    state["pools"] = loading.load_named(session.preset, list(session.overrides))
    shapes = nodes.node_shapes(state["pools"], state["render"]["objects"])
    node_docs = nodes.node_objects(shapes)
    cluster.apply(node_docs)
    cluster.wait_nodes_ready(len(node_docs))
    devices = nodes.dra_objects(shapes)
    cluster.apply(devices, server_side=True)
    cluster.apply(nodes.runtime_classes(state["render"]["objects"]), server_side=True)
    objects = state["render"]["objects"]
    needs_lws = any(o["kind"] == "LeaderWorkerSet" for o in objects)
    crds = crds_for(objects, frozenset({lws.GROUP}) if needs_lws else frozenset())
    cluster.apply(crds, server_side=True)
    pools = ", ".join(f"{s.name_prefix} x{s.count}" for s in shapes)
    slices = state["dra"] = sum(d["kind"] == "ResourceSlice" for d in devices)
    detail = f"kwok, {len(node_docs)} nodes ({pools}), {len(crds)} CRDs" + (
        f", {slices} ResourceSlices (DRA)" if slices else ""
    )
    if needs_lws:
        if "lws" not in bins:
            raise StepError("its LeaderWorkerSet needs the LWS controller, built with `--all` (or by naming it)")
        controller = lws.Controller(bins["lws"] / "lws-controller", session.workdir / "lws", cluster.kubeconfig)
        state["lws"] = controller
        detail += "; " + controller.start(lambda docs, side: cluster.apply(docs, server_side=side))
    return detail
