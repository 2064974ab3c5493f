"""The plan's image pre-pull: which images, onto which nodes (components/specs/prepull.py renders it)."""

from __future__ import annotations

from components.catalog.accelerators import AcceleratorProfile
from components.manifest import Manifest
from components.specs import images, prepull
from stacks.config import StackConfig
from stacks.config.errors import ConfigError


def _first_pod_spec(workload: Manifest) -> Manifest:
    spec = workload["spec"]
    if workload["kind"] == "LeaderWorkerSet":
        return dict(spec["leaderWorkerTemplate"]["leaderTemplate"]["spec"])
    return dict(spec["template"]["spec"])


def serving_placement(accelerator: AcceleratorProfile, workload: Manifest) -> prepull.Placement:
    """Where the serving workload's pods may run, as the pre-pull DaemonSet is placed."""
    return prepull.placement_of(_first_pod_spec(workload), accelerator.device_resource)


def prepull_manifests(
    config: StackConfig, accelerator: AcceleratorProfile, serving: list[Manifest], daemons: list[Manifest]
) -> list[Manifest]:
    """The DaemonSet pulling every image of the pods on the serving nodes (model servers with their init
    containers and sidecars, the per-node cache daemons), placed where the model servers may run.

    `serving`: the model-server roles' objects, the decode workload last; `daemons`: the LMCache server's
    and the Mooncake client's objects.
    """
    if not config.images.prepull:
        return []
    placement = serving_placement(accelerator, serving[-1])
    if not placement.constrained:
        pool = config.cache.node_pool
        where = (
            f"needs the model servers' node pool {pool} to select its nodes by label (node_pools.{pool}.labels)"
            if pool
            else "needs the model servers placed on a pool (cache.node_pool)"
        )
        raise ConfigError(
            "images.prepull", True, f"{where}: unplaced, the DaemonSet would pull every image onto every node"
        )
    return prepull.prepull_manifests(
        prepull.PrepullSpec(config.namespace, images.images([*serving, *daemons]), placement)
    )
