"""`./run e2e [PRESET ...] [--all] [--layers] [--no-changes] [--faults [--fault NAME ...]] [--build-only]`: the real
engine on a local control plane.

Builds the tools first where the cache lacks them (`e2e.tools`), then runs each preset's lifecycle
(`e2e.lifecycle`) and, with no preset named or with `--layers`, the layered run (`e2e.layers`: a cluster
stack and two serving stacks on it); with `--faults`, each named preset deployed and put through the faults
of `e2e.faults` instead (all of them, or those `--fault` names). Exit status 1 when a tool cannot be built
or a run fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from e2e import faults, layers, lifecycle, package_run, session, tools
from e2e.engine import REPO

# Presets whose Kubernetes layer needs no cloud account: an existing cluster.
DEFAULT = (
    "dev",
    "gpu-vllm-native-cpu",
    "gpu-vllm-native-fs",
    "gpu-vllm-lmcache-server-pd",
    "existing-mi300",
    "gpu-vllm-native-fs-autoscale",
    "gpu-vllm-native-cpu-precise",
    "gpu-vllm-native-pd",
)
# The presets whose config changes are compared with the change plan when none is named (the others run
# the lifecycle without them, to keep CI short): no pool, a filesystem tier, a described pool.
CHANGE_PRESETS = ("dev", "gpu-vllm-native-fs", "existing-mi300")


def _local_presets() -> list[str]:
    """The presets on an existing cluster (no cloud account): the ones `--all` runs."""
    from stacks.config import loading

    return [name for name in loading.preset_names() if loading.load_preset(name, []).cluster.provider == "existing"]


def _needs_lws(presets: list[str], overrides: list[str]) -> bool:
    """Whether a preset runs a LeaderWorkerSet, whose controller is built only then."""
    from stacks.config import loading

    known = set(loading.preset_names())
    return any(
        loading.load_preset(name, overrides).cache.host_type == "multi-host" for name in presets if name in known
    )


def selection(named: list[str], every: bool, extras: bool) -> tuple[list[str] | None, bool]:
    """(the presets to run, None for every local one; whether the runs beyond the presets run: the layered run and
    the package's): none named, the default presets and them (CI's `./run e2e`); `--all`, every local preset and
    them; `--layers` or `--package` alone (`extras`), those only."""
    if every:
        return None, True
    return (named or ([] if extras else list(DEFAULT))), extras or not named


def refusal(args: argparse.Namespace, presets: list[str], run_layers: bool) -> str | None:
    """Why the arguments cannot run, checked before anything is built, deployed, written or removed: names
    (presets on an existing cluster), `--stop`'s name, `--workdir`, and `--set` through the program's own
    loading and plan for each preset it applies to. None: they can."""
    from stacks.config import loading
    from stacks.config.errors import ConfigError
    from stacks.planning.plan import plan

    if args.presets and args.all:
        return f"PRESET = {args.presets[0]!r}: --all runs every preset on an existing cluster; name presets or --all"
    if args.presets and args.stop:
        return f"PRESET = {args.presets[0]!r}: --stop stops the cluster a --keep run left; it runs no preset"
    if args.set and args.stop:
        return f"--set = {args.set[0]!r}: --stop stops the cluster a --keep run left; it deploys nothing to set"
    local = _local_presets()
    allowed = f"allowed: {', '.join(local)} (presets on an existing cluster; the layered run is --layers)"
    for name in [*presets, *([args.stop] if args.stop else [])]:
        if name == args.stop and name == layers.NAME:
            continue
        if name not in local:
            field = "--stop" if name == args.stop and name not in presets else "PRESET"
            why = "a stack of the repo: --layers deploys the layer stacks" if name in loading.stack_names() else allowed
            if name in loading.preset_names() and name not in local:
                why = f"creates a cloud cluster; {allowed}"
            return f"{field} = {name!r}: {why}"
    workdir = args.workdir.expanduser().resolve()
    if workdir.exists() and not workdir.is_dir():
        return f"--workdir = '{args.workdir}': not a directory (logs, state and each run's files go there)"
    if workdir in (Path(workdir.anchor), Path.home().resolve()) or REPO.resolve().is_relative_to(workdir):
        return f"--workdir = '{args.workdir}': each run removes its directory in it; name one of its own (out/e2e)"
    if args.faults and (args.layers or args.all or not args.presets):
        return "--faults: name the presets to put through the faults (without --layers or --all), e.g. `--faults dev`"
    if args.faults and args.keep:
        return "--keep: a faults run destroys what its faults leave; run the preset without --faults to keep it"
    unknown = [f for f in args.fault if f not in faults.FAULTS]
    if unknown or (args.fault and not args.faults):
        why = f"allowed: {', '.join(faults.FAULTS)}" if unknown else "only with --faults"
        return f"--fault = {(unknown or args.fault)[0]!r}: {why}"
    if args.set and run_layers:
        return (
            f"--set = {args.set[0]!r}: the layered run deploys the repo's stack files as they are; name presets"
            " (without --layers or --all) to run them with --set"
        )
    for name in presets:
        try:
            plan(loading.load_preset(name, args.set))
        except ConfigError as error:
            return f"{name}: {error}"
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./run e2e", description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help=f"presets to deploy (default: {' '.join(DEFAULT)})")
    parser.add_argument("--all", action="store_true", help="every preset that needs no cloud account")
    parser.add_argument(
        "--layers",
        action="store_true",
        help="the layered run: a cluster stack and two serving stacks on it (alone, unless presets are named)",
    )
    parser.add_argument(
        "--package",
        action="store_true",
        help="the component package: dev's serving stack from YAML (examples/yaml-serving-stack), against the"
        " Python render (alone, unless presets are named; part of every run that names none)",
    )
    parser.add_argument("--no-changes", action="store_true", help="skip the config-change comparisons")
    parser.add_argument(
        "--faults",
        action="store_true",
        help="put each named preset through the faults (interrupted updates, a restarted API server, a lost node,"
        " a server that never starts, an interrupted destroy) and print what happened",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help=f"with --faults, only these (default: every one): {', '.join(faults.FAULTS)}",
    )
    parser.add_argument("--build-only", action="store_true", help="build the tools and stop")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="stack config over the preset, as `render --set`",
    )
    parser.add_argument("--keep", action="store_true", help="leave the stack deployed and the cluster running")
    parser.add_argument("--stop", metavar="PRESET", help="stop the cluster a --keep run left running")
    parser.add_argument("--workdir", type=Path, default=REPO / "out" / "e2e", help="logs and state (default out/e2e)")
    args = parser.parse_args(argv)
    presets, extras = selection(args.presets, args.all, args.layers or args.package)
    named_extras = (args.layers or args.package) and not args.all  # the runs named: those only
    run_layers = not args.faults and (args.layers if named_extras else extras)
    run_package = not args.faults and (args.package if named_extras else extras)
    presets = _local_presets() if presets is None else presets
    refused = refusal(args, presets if not args.stop else [], run_layers and not args.stop)
    if refused is not None:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    try:
        bins = tools.ensure_all(extra=args.all or _needs_lws(presets, args.set))
    except tools.BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.build_only:
        return 0
    if args.stop:
        from e2e.kwok import Cluster
        from e2e.lws import stop_recorded

        stop_recorded(args.workdir / args.stop / "lws" / "lws-controller.pid")
        Cluster(session.cluster_name(args.stop), args.workdir / args.stop / "cluster", bins).delete()
        return 0
    started, reports = time.monotonic(), []
    if args.faults:
        names = args.fault or list(faults.FAULTS)
        for preset in presets:
            reports.append(faults.run_faults(preset, args.workdir / f"{preset}-faults", bins, names, args.set))
        presets = []
    for preset in presets:
        changes = not args.no_changes and (bool(args.presets) or preset in CHANGE_PRESETS)
        reports.append(
            lifecycle.run_preset(
                preset, args.workdir / preset, bins, changes=changes, keep=args.keep, overrides=args.set
            )
        )
    if run_layers:
        reports.append(layers.run_layers(args.workdir / layers.NAME, bins, keep=args.keep))
    if run_package:
        reports.append(package_run.run_package(args.workdir / package_run.NAME, bins, keep=args.keep))
    failed = [r.preset for r in reports if r.failed]
    print(
        f"[e2e] {len(reports) - len(failed)} of {len(reports)} runs passed in {time.monotonic() - started:.0f} s"
        + (f"; failed: {', '.join(failed)} (logs in {args.workdir})" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
