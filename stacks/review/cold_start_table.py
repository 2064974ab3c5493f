"""The cold start table: one model-server pod's start in the cases that matter, from the startup model
(stacks/planning/cold_starts.py) with the stack's model cache as the weight source and its compile cache warm or not."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog import startup_figures as figures
from components.specs import images, prepull
from components.specs.startup import ColdStart
from components.units import GB
from stacks.planning import cold_starts
from stacks.planning.plan import StackPlan


@dataclass(frozen=True)
class Case:
    name: str
    cold: ColdStart
    image: str  # how the image arrives
    weights: str  # where the weights come from, and how fast


def _pod(stack_plan: StackPlan, cache_on: bool, **how: bool) -> ColdStart:
    server = stack_plan.model_server
    cache = server.model_cache if cache_on else None
    return cold_starts.model_server_cold_start(
        stack_plan.config, server.accelerator.key, server.model, server.image, cache, **how
    )


def restart(stack_plan: StackPlan, cache_on: bool) -> ColdStart:
    """A restarted pod on its node (the image is there): the case a rollout or a crash repeats."""
    return _pod(stack_plan, cache_on, image_on_node=True, warm=True)


def cases(stack_plan: StackPlan) -> list[Case]:
    server, mirror = stack_plan.model_server, stack_plan.mirror
    gb = cold_starts.image_bytes(server.image) / GB
    streamed = mirror is not None and mirror.artifact_registry
    pulled = f"{gb:.1f} GB " + (
        "through the Artifact Registry mirror (first pull of the image: whole)"
        if streamed
        else "through the ECR pull-through cache"
        if mirror and images.split_image(server.image)[0] in mirror.registries
        else "pulled from the upstream registry"
    )
    read = f"streamed: {gb * figures.STREAMED_IMAGE_READ_RATIO:.1f} GB read at start (assumed)"
    on = server.model_cache is not None
    source = cold_starts.weight_source(stack_plan.config, server.model_cache)
    weights = (
        f"{server.model.weight_bytes.bytes / GB:.1f} GB from {source.name} ({source.bytes_per_second / GB:.2f} GB/s)"
    )
    hub = cold_starts.weight_source(stack_plan.config, None)
    from_hub = f"{server.model.weight_bytes.bytes / GB:.1f} GB from {hub.name} ({hub.bytes_per_second / GB:.2f} GB/s)"
    first = Case("first pod (empty caches)", _pod(stack_plan, on), pulled, weights)
    if stack_plan.manifests(
        prepull.WORKLOAD
    ):  # `pulumi up` waits for the pre-pull on every node before any model server
        ahead = f"pre-pulled by `{prepull.NAME}`"
        first = Case("first pod (empty caches)", _pod(stack_plan, on, image_on_node=True), ahead, weights)
    out = [
        first,
        Case(
            "later pod, new node",
            _pod(stack_plan, on, warm=True, image_streamed=streamed),
            read if streamed else pulled,
            weights,
        ),
        Case("restart on its node", restart(stack_plan, on), "on the node", weights),
    ]
    if on:
        out.append(Case("restart, model cache off", restart(stack_plan, False), "on the node", from_hub))
    return out


def _m(seconds: int) -> str:
    return f"{seconds // 60}m{seconds % 60:02d}s"


def rows(stack_plan: StackPlan) -> list[tuple[str, ...]]:
    return [
        (c.name, c.image, c.weights, _m(c.cold.image_pull), _m(c.cold.weight_fetch), _m(c.cold.load),
         _m(c.cold.compile), _m(c.cold.modeled))
        for c in cases(stack_plan)
    ]  # fmt: skip


def rollout_pulls(stack_plan: StackPlan) -> tuple[int, int | None]:
    """Seconds of image pulls on the critical path of a rollout to a new image: each wave (a replica at a
    time) pulls the model-server image on its node; with the pre-pull, every node pulls every serving image
    at once before the first wave (None: no pre-pull)."""
    server = stack_plan.model_server
    waves = server.replicas * _pod(stack_plan, server.model_cache is not None).image_pull
    ahead = next((b.cold_start.image_pull for b in stack_plan.budgets if b.workload == prepull.NAME), None)
    return waves, ahead
