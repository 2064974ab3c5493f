"""dev's serving stack declared in YAML through the component package, on the real engine and a local control plane.

The YAML program is `examples/yaml-serving-stack` as committed, its ServingStack's properties given the run's local
settings (the control plane's kubeconfig, the router chart and CRDs from the fixtures), which the Python side gets as
stack config: the Python render of the same config is what the API server must hold after `pulumi up`. Steps: a
wrong enum value and a value the config refuses, each one line before anything is created; preview; up; the
component's outputs; the live objects against the render; no perpetual diff; the policy pack (passes, and a floating
image tag fails it); destroy.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from e2e.engine import Engine
from e2e.kwok import ClusterError
from e2e.policy_step import FLOATING_TAG, failed_with, pack_args
from e2e.session import HF_TOKEN, ROUTER_CHART, ROUTER_CHART_VERSION, Session, new_session, start
from e2e.steps import Report, StepError, check_live_matches, timed
from stacks.config.loading import deep_merge

NAME = "yaml-package"
EXAMPLE = Path("examples") / "yaml-serving-stack"
COMPONENT_TYPE = "llmd:ServingStack"
OUTPUTS = ("namespace", "routerEndpoint", "inferencePool", "replicas", "cpuTierPerPod")
# Two bad inputs and what the consumer must read: the YAML host's schema check, the stack config's own check.
BAD_ENUM = ({"cache": {"connector": "nativ"}}, 'Allowed values are NATIVE ("native")')
BAD_VALUE = ({"cache": {"tensorParallelism": 3}}, "property cache.tensorParallelism with value 3 has a problem")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def example_program(project: Path) -> dict[str, Any]:
    return dict(yaml.safe_load((project / EXAMPLE / "Pulumi.yaml").read_text()))


def serving_stack(program: dict[str, Any]) -> dict[str, Any]:
    """The program's one ServingStack resource."""
    found = [r for r in (program.get("resources") or {}).values() if r.get("type") == COMPONENT_TYPE]
    if len(found) != 1:
        raise StepError(f"{EXAMPLE}/Pulumi.yaml: {len(found)} resources of type {COMPONENT_TYPE}, expected one")
    return dict(found[0])


def config_overrides(properties: dict[str, Any], prefix: str = "") -> list[str]:
    """The ServingStack's literal properties as the Python side's `--set` overrides (camelCase -> config keys);
    the token, a reference, and the preset are not config sections."""
    out: list[str] = []
    for key, value in properties.items():
        if not prefix and key in ("hfToken", "preset"):
            continue
        path = f"{prefix}{_snake(key)}"
        if isinstance(value, dict):
            out += config_overrides(value, f"{path}.")
        else:
            out.append(f"{path}={yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}")
    return out


def _write_program(source: dict[str, Any], into: Path, extra: dict[str, Any]) -> None:
    """The example with `extra` merged into its ServingStack's properties, written as `into/Pulumi.yaml`."""
    program = dict(source)
    program["resources"] = {
        name: (
            {**r, "properties": deep_merge(r.get("properties") or {}, extra)} if r.get("type") == COMPONENT_TYPE else r
        )
        for name, r in source["resources"].items()
    }
    into.mkdir(parents=True, exist_ok=True)
    (into / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))


def local_settings(session: Session) -> dict[str, Any]:
    """What the run adds to the program: this control plane and the fixtures' router chart and CRDs (the Python
    side gets the same through its stack config, e2e.session.stack_config)."""
    return {
        "cluster": {"kubeconfig": str(session.cluster.kubeconfig)},
        "router": {
            "chartFile": str(ROUTER_CHART),
            "version": ROUTER_CHART_VERSION,
            "gaieCrdsFile": str(session.workdir / "gaie-crds.yaml"),
        },
    }


def run_package(workdir: Path, bins: dict[str, Path], keep: bool = False) -> Report:
    program = example_program(Path(__file__).resolve().parents[1])
    properties = serving_stack(program).get("properties") or {}
    preset = str(properties.get("preset") or "")
    if not preset:
        raise StepError(f"{EXAMPLE}/Pulumi.yaml: its ServingStack names no preset")
    session = new_session(preset, workdir, bins, config_overrides(properties))
    session.report.preset = NAME
    report, cluster = session.report, session.cluster
    yaml_dir = session.project / EXAMPLE
    engine = Engine(yaml_dir, workdir / "yaml", [workdir / "bin", *(bins[t] for t in TOOL_DIRS)])
    try:
        start(session, bins)
        _write_program(program, yaml_dir, local_settings(session))
        timed(report, "YAML stack init", lambda: _init(engine))
        for label, (extra, expected) in (("a wrong enum value", BAD_ENUM), ("a value the config refuses", BAD_VALUE)):

            def refused(e: dict[str, Any] = extra, x: str = expected) -> str:
                return _refused(session, program, engine, e, x)

            timed(report, f"refused: {label}", refused)

        def up() -> str:
            result = engine.run("up", "--yes")
            if not result.ok:
                raise StepError(result.tail(40))
            outputs = engine.outputs()
            missing = [k for k in OUTPUTS if k not in outputs]
            if missing:
                raise StepError(f"outputs missing: {', '.join(missing)}")
            return ", ".join(f"{k} {outputs[k]}" for k in OUTPUTS)

        timed(report, "pulumi up (YAML, through the package)", up)
        timed(report, "live objects equal the Python render", lambda: check_live_matches(cluster, session.objects))
        timed(report, "pulumi preview --expect-no-changes", lambda: _no_change(engine))
        timed(report, "policy pack passes", lambda: _policy(session, program, engine))
        if not keep:
            timed(report, "destroy", lambda: _destroy(engine))
    except (StepError, ClusterError):
        pass
    finally:
        session.close(keep)
    return report


# The tools on PATH: the CLI, the Kubernetes provider, the YAML language host (the Python one is the session's shim).
TOOL_DIRS = ("pulumi", "kubernetes-provider", "pulumi-yaml")


def _init(engine: Engine) -> str:
    engine.workdir.mkdir(parents=True, exist_ok=True)
    engine.init({}, {"hfToken": HF_TOKEN})
    return f"project {engine.project.name}, stack {engine.stack}"


def _refused_copy(session: Session, program: dict[str, Any], engine: Engine, extra: dict[str, Any]) -> Path:
    """A copy of the program with `extra` in its ServingStack's properties, on the same stack and backend."""
    bad_dir = engine.project.parent / f"{engine.project.name}-refused"  # beside it: the package path holds
    shutil.rmtree(bad_dir, ignore_errors=True)
    _write_program(program, bad_dir, deep_merge(local_settings(session), extra))
    stack_file = f"Pulumi.{engine.stack}.yaml"  # the stack's config (its secret token) lives beside the program
    shutil.copyfile(engine.project / stack_file, bad_dir / stack_file)
    return bad_dir


def _refused(session: Session, program: dict[str, Any], engine: Engine, extra: dict[str, Any], expected: str) -> str:
    """A copy of the program with a bad property: `pulumi preview` fails with `expected` and creates nothing."""
    bad = Engine(_refused_copy(session, program, engine, extra), engine.workdir, engine.path_dirs)
    result = bad.run("preview")
    text = result.stdout + result.stderr
    if result.ok or expected not in text:
        raise StepError(f"expected a failed preview saying {expected!r}:\n{result.tail(15)}")
    if engine.state():
        raise StepError("a refused preview left resources in the state")
    line = next(line for line in text.splitlines() if expected in line)
    return line[line.index(expected) :][:200]


def _policy(session: Session, program: dict[str, Any], engine: Engine) -> str:
    """The policy pack holds the package's stacks as the program's: the stack passes it, and a floating image tag
    (set as a property) fails the preview with its rule."""
    args = pack_args(engine, session.project)
    result = engine.run("preview", *args)
    if not result.ok:
        raise StepError("the YAML stack fails the policy pack:\n" + result.tail(40))
    _, image, rule = FLOATING_TAG
    bad_dir = _refused_copy(session, program, engine, {"cache": {"image": image}})
    seeded = Engine(bad_dir, engine.workdir, engine.path_dirs).run("preview", *args)
    if not failed_with(seeded, rule, "floating tag"):
        raise StepError(f"a floating image tag did not fail the preview with rule {rule}:\n" + seeded.tail(30))
    return f"passes; `cache.image: {image}` fails it with {rule}"


def _no_change(engine: Engine) -> str:
    result = engine.run("preview", "--expect-no-changes", "--diff")
    if not result.ok:
        raise StepError(result.tail(40))
    return "no perpetual diff"


def _destroy(engine: Engine) -> str:
    result = engine.run("destroy", "--yes", "--skip-preview")
    if not result.ok:
        raise StepError(result.tail(40))
    if engine.state():
        raise StepError("the YAML stack's state still holds resources after destroy")
    return "nothing left in the state"
