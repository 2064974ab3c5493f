"""`./run e2e --layers`: the layered layout through the real engine, in one control plane and one backend.

A cluster stack (`layer: cluster`: one described H100 pool, the InferencePool CRDs, a kgateway Gateway with
body-based routing) and two serving stacks on it (Qwen3-32B and Qwen3-8B, CPU tier, each its namespace and
router release) that read its `llmdCluster` live and its kubeconfig through a StackReference. Up the cluster,
then each serving stack; check the Gateway, the HTTPRoutes, the namespaces' labels and who owns the CRDs;
`preview --expect-no-changes` on all three; destroy the serving stacks, then the cluster stack.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from e2e import lifecycle, nodes, session
from e2e.engine import PASSPHRASE, Engine, copy_project, language_host_shim
from e2e.kwok import Cluster, ClusterError
from e2e.steps import Report, StepError, check_live_matches, render_stack, timed
from stacks.config.cluster_outputs import GATEWAY_ROUTES_LABEL

NAME = "layers"
CLUSTER_STACK = "e2e-cluster"
ORGANIZATION = "organization"  # the file backend's one organization: `organization/<project>/<stack>`
POOL = "h100"
# The label the described pool's nodes carry (the KWOK nodes e2e.nodes makes from the pool get it too).
POOL_LABELS = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
BBR_CHART_DIR = session.FIXTURES / "charts" / "body-based-routing-v1.5.0"
GATEWAY_API_CRDS = session.FIXTURES / "schemas" / "gateway-api" / "v1.3.0"
CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
INFERENCE_POOL_CRD = "inferencepools.inference.networking.k8s.io"
__all__ = ["SERVING", "Serving", "cluster_sections", "flatten", "run_layers", "serving_sections"]


@dataclass(frozen=True)
class Serving:
    stack: str
    namespace: str
    model: str
    tensor_parallelism: int | None = None  # None: the plan's choice for the model


SERVING = (
    Serving("e2e-qwen3-32b", "qwen3-32b", "Qwen/Qwen3-32B"),
    Serving("e2e-qwen3-8b", "qwen3-8b", "Qwen/Qwen3-8B", tensor_parallelism=1),
)


def cluster_sections(kubeconfig: str, gaie_crds_file: str, bbr_chart_file: str) -> dict[str, Any]:
    """The cluster stack's `llmd:` sections: the harness's cluster as an existing one, one described pool."""
    return {
        "layer": "cluster",
        "cluster": {"provider": "existing", "kubeconfig": kubeconfig},
        "node_pools": {
            POOL: {
                "accelerator": "gpu",
                "accelerators_per_node": 8,
                "host_memory": "2TiB",
                "node_count": 1,
                "labels": dict(POOL_LABELS),
            }
        },
        "gateway": {"enabled": True, "class_name": "kgateway", "bbr_chart_file": bbr_chart_file},
        "router": {"gaie_crds_file": gaie_crds_file},
    }


def serving_sections(serving: Serving, router_chart: str, router_version: str) -> dict[str, Any]:
    """A serving stack's `llmd:` sections: its own namespace and router release, on the cluster stack's pool,
    sized small so that both serving stacks share its one node."""
    cache: dict[str, Any] = {
        "model": serving.model,
        "node_pool": POOL,
        "replicas": 1,
        "tier": {"variant": "cpu", "cpu": "64GiB"},
    }
    if serving.tensor_parallelism is not None:
        cache["tensor_parallelism"] = serving.tensor_parallelism
    return {
        "namespace": serving.namespace,
        "cluster": {"provider": "stack", "stack": f"{ORGANIZATION}/llmd/{CLUSTER_STACK}"},
        "cache": cache,
        "router": {"release": serving.namespace, "chart_file": router_chart, "version": router_version},
    }


def _path_key(key: str) -> str:
    """One step of a `pulumi config set --path` key: bracketed and quoted when it holds a dot or a slash."""
    return f'["{key}"]' if any(c in key for c in "./") else f".{key}"


def flatten(sections: dict[str, Any], namespace: str = "llmd") -> dict[str, str]:
    """Sections -> `pulumi config set --path` keys and values (the engine stores true/false and integers as such)."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(prefix + _path_key(str(key)), item)
        else:
            out[prefix] = json.dumps(value) if isinstance(value, bool) else str(value)

    for section, value in sections.items():
        walk(f"{namespace}:{section}", value)
    return out


def _package_chart(source: Path, into: Path) -> Path:
    """A chart directory as the .tgz Helm reads (`<chart name>/...` inside)."""
    name = yaml.safe_load((source / "Chart.yaml").read_text())["name"]
    into.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(into, "w:gz") as archive:
        archive.add(source, arcname=name)
    return into


def _docs(folder: Path) -> list[dict[str, Any]]:
    return [d for path in sorted(folder.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]


@dataclass
class _Layered:
    cluster: Cluster
    engines: dict[str, Engine]
    renders: dict[str, dict[str, Any]]

    def up(self, stack: str, wanted: tuple[str, ...]) -> str:
        result = self.engines[stack].run("up", "--yes", "--skip-preview")
        if not result.ok:
            raise StepError(result.tail(40))
        outputs = self.engines[stack].outputs()
        missing = [k for k in wanted if k not in outputs]
        if missing:
            raise StepError(f"stack outputs missing: {', '.join(missing)}")
        return f"outputs {', '.join(sorted(outputs))}"

    def no_change(self, stack: str) -> str:
        result = self.engines[stack].run("preview", "--expect-no-changes", "--diff")
        if not result.ok:
            raise StepError(result.tail(40))
        return "no perpetual diff"

    def destroy(self, stack: str) -> str:
        """The stack's destroy (lifecycle's: protection, nothing left); the InferencePool CRDs stay until the
        cluster stack's own destroy removes them."""
        detail = lifecycle.destroy_under_protect(self.engines[stack], self.cluster, {"render": self.renders[stack]})
        crds = self.cluster.kubectl("get", "crd", INFERENCE_POOL_CRD, check=False).returncode == 0
        if crds != (stack != CLUSTER_STACK):
            raise StepError(
                f"after destroying {stack} the CRD {INFERENCE_POOL_CRD} is {'still' if crds else 'not'} there"
            )
        return detail + ("; the InferencePool CRDs stay" if crds else "; the InferencePool CRDs are gone")


def _check_gateway(layered: _Layered) -> str:
    """The Gateway the cluster stack made, each serving stack's HTTPRoute attached to it from a namespace
    labelled for it, and the InferencePool CRDs in the cluster stack's state only."""
    cluster = layered.cluster
    gateways = cluster.objects("gateways.gateway.networking.k8s.io")
    if len(gateways) != 1:
        raise StepError(f"{len(gateways)} Gateways on the API server, 1 expected")
    gw = gateways[0]["metadata"]
    problems = []
    for serving in SERVING:
        routes = cluster.objects("httproutes.gateway.networking.k8s.io", serving.namespace)
        parents = [p for r in routes for p in r["spec"].get("parentRefs", [])]
        if not any(p["name"] == gw["name"] and p.get("namespace") == gw["namespace"] for p in parents):
            problems.append(f"{serving.namespace}: no HTTPRoute attached to {gw['namespace']}/{gw['name']}")
        out = cluster.kubectl("get", "namespace", serving.namespace, "-o", "json", check=False)
        labels = json.loads(out.stdout)["metadata"].get("labels", {}) if out.returncode == 0 else {}
        if labels.get(GATEWAY_ROUTES_LABEL) != gw["name"]:
            problems.append(f"namespace {serving.namespace}: {GATEWAY_ROUTES_LABEL}={labels.get(GATEWAY_ROUTES_LABEL)}")
    owners = {
        stack: sorted(r["urn"].rsplit("::", 1)[-1] for r in engine.state() if r.get("type") == CRD_TYPE)
        for stack, engine in layered.engines.items()
    }
    if not owners[CLUSTER_STACK]:
        problems.append("the cluster stack's state holds no CustomResourceDefinition")
    problems += [f"{s} holds CRDs {', '.join(crds)}" for s, crds in owners.items() if s != CLUSTER_STACK and crds]
    if problems:
        raise StepError("; ".join(problems))
    return (
        f"Gateway {gw['namespace']}/{gw['name']}, {len(SERVING)} HTTPRoutes and labelled namespaces;"
        f" CRDs only in {CLUSTER_STACK} ({len(owners[CLUSTER_STACK])})"
    )


def _check_shared_node(cluster: Cluster) -> str:
    """Both serving stacks' model servers (the pods asking for GPUs) Ready on the described pool's one node."""
    problems, placed = [], []
    for serving in SERVING:
        pods = [
            p
            for p in cluster.objects("pods", serving.namespace)
            if (p["spec"].get("nodeName") or "").startswith(f"pool-{POOL}")
            and nodes.device_requests(p["spec"]).get("nvidia.com/gpu")
        ]
        ready = [
            p
            for p in pods
            if any(c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions", []))
        ]
        if not ready:
            problems.append(f"{serving.namespace}: no Ready pod on a pool-{POOL} node")
        placed += [f"{p['metadata']['namespace']}/{p['metadata']['name']}@{p['spec']['nodeName']}" for p in ready]
    if problems:
        raise StepError("; ".join(problems))
    return ", ".join(placed)


def run_layers(workdir: Path, bins: dict[str, Path], keep: bool = False) -> Report:
    report = Report(NAME)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    cluster = Cluster(session.cluster_name(NAME), workdir / "cluster", bins)
    shim_dir = workdir / "bin"
    language_host_shim(shim_dir, bins["pulumi"] / "pulumi-language-python-exec")
    project = copy_project(workdir / "project")
    path_dirs = [shim_dir, bins["pulumi"], bins["kubernetes-provider"]]
    stacks = [CLUSTER_STACK, *(s.stack for s in SERVING)]
    # One work directory: one file backend (the StackReference resolves) and one engine log.
    engines = {stack: Engine(project, workdir, path_dirs, stack=stack) for stack in stacks}
    layered = _Layered(cluster, engines, {})
    gaie = workdir / "gaie-crds.yaml"
    gaie.write_text("".join("---\n" + p.read_text() for p in session.GAIE_CRDS))
    bbr = _package_chart(BBR_CHART_DIR, workdir / "charts" / "body-based-routing-v1.5.0.tgz")
    cluster_config = cluster_sections(str(cluster.kubeconfig), str(gaie), str(bbr))
    serving_configs = {
        s.stack: serving_sections(s, str(session.ROUTER_CHART), session.ROUTER_CHART_VERSION) for s in SERVING
    }
    try:

        def control_plane() -> str:
            cluster.create()
            crds = _docs(GATEWAY_API_CRDS)
            cluster.apply(crds, server_side=True)
            return f"kwok; Gateway API CRDs v1.3.0 ({len(crds)}), as kgateway's install brings them"

        timed(report, "local control plane, the Gateway API CRDs (kgateway's prerequisite)", control_plane)

        def init() -> str:
            engines[CLUSTER_STACK].init(flatten(cluster_config), {})
            for stack, sections in serving_configs.items():
                engines[stack].init(flatten(sections), {"llmd:hfToken": session.HF_TOKEN})
            return f"stacks {', '.join(stacks)} in one local backend"

        timed(report, "stack init (one backend, passphrase secrets)", init)

        def render() -> str:
            for stack in stacks:
                layered.renders[stack] = render_stack(project, stack, workdir / "render" / stack)
            return ", ".join(f"{s} {len(r['objects'])} objects" for s, r in layered.renders.items())

        timed(report, "offline renders (serving stacks planned from the cluster stack's file)", render)

        def node_pool() -> str:
            from stacks.config import loading

            config = loading.build(None, cluster_config)
            objects = [o for s in SERVING for o in layered.renders[s.stack]["objects"]]
            shapes = nodes.node_shapes(config, objects)
            node_docs = nodes.node_objects(shapes)
            cluster.apply(node_docs)
            cluster.wait_nodes_ready(len(node_docs))
            cluster.apply(nodes.dra_objects(shapes), server_side=True)
            cluster.apply(nodes.runtime_classes(objects), server_side=True)
            every = [o for r in layered.renders.values() for o in r["objects"]]
            cluster.apply(session.crds_for(every), server_side=True)
            return ", ".join(f"{s.name_prefix} x{s.count}" for s in shapes)

        timed(report, "KWOK nodes of the described pool", node_pool)
        timed(report, f"pulumi up {CLUSTER_STACK}", lambda: layered.up(CLUSTER_STACK, ("llmdCluster", "kubeconfig")))
        for serving in SERVING:
            timed(
                report,
                f"pulumi up {serving.stack} (llmdCluster live, kubeconfig by StackReference)",
                partial(layered.up, serving.stack, ("namespace", "routerEndpoint", "cacheSizing")),
            )
        for stack in stacks:
            timed(
                report,
                f"live objects of {stack} match its render",
                partial(check_live_matches, cluster, layered.renders[stack]["objects"]),
            )
        timed(report, "Gateway, HTTPRoutes, namespace labels, CRD ownership", lambda: _check_gateway(layered))
        timed(report, f"both model servers on the one pool-{POOL} node", lambda: _check_shared_node(cluster))
        for stack in stacks:
            timed(report, f"pulumi preview --expect-no-changes {stack}", partial(layered.no_change, stack))
        if not keep:
            for stack in reversed(stacks):
                timed(report, f"destroy {stack}", partial(layered.destroy, stack))
    except (StepError, ClusterError):
        pass
    finally:
        if keep:
            report.say(
                f"kept: kubectl --kubeconfig {cluster.kubeconfig}; PULUMI_BACKEND_URL=file://{workdir / 'state'}"
                f" PULUMI_CONFIG_PASSPHRASE={PASSPHRASE}; stop it with `./run e2e --stop {NAME}`"
            )
        else:
            cluster.delete()
    return report
