"""The summary's rows on what the model servers start from: the model cache (weights fetched once onto a claim)
and the images (mirrored, pre-pulled, or pulled whole by each node)."""

from __future__ import annotations

from components.specs import images, model_cache, prepull
from stacks.config.providers import provider_of
from stacks.planning.plan import StackPlan
from stacks.planning.prepull_placement import serving_placement


def model_cache_row(stack_plan: StackPlan) -> str:
    cache, model = stack_plan.model_cache, stack_plan.model_server.model.name
    if cache is None:
        return f"off: every model-server pod downloads {model} from Hugging Face"
    job = next(m for m in stack_plan.manifests(model_cache.WORKLOAD) if m["kind"] == "Job")
    claim = f"the tier's claim `{cache.claim}`" if cache.shared_with_tier else f"claim `{cache.claim}`"
    loading = f", loaded with `--load-format={cache.load_format}`" if cache.load_format else ""
    compiled = f"; compile caches in `{cache.compile_subpath}`" if cache.compile_cache else ""
    return f"`models/{model}` on {claim}, fetched once by Job `{job['metadata']['name']}`{loading}{compiled}"


def images_row(stack_plan: StackPlan) -> str:
    how = images_source(stack_plan)
    pulled = prepull.pulled_images(stack_plan.manifests(prepull.WORKLOAD))
    if pulled:
        return (
            f"{how}; {', '.join(f'`{i}`' for i in pulled)} pre-pulled onto every node of the serving pool at once"
            f" by DaemonSet `{prepull.NAME}`, which the model servers start after"
        )
    if stack_plan.mirror is not None:
        return how
    server = stack_plan.model_server
    if serving_placement(server.accelerator, stack_plan.model_server_manifests[-1]).constrained:
        return f"{how}; `images.prepull: true` pulls them onto the serving pool's nodes ahead of the model servers"
    return f"{how}; `images.prepull` (with `cache.node_pool`) would pull them onto the serving pool ahead of time"


def images_source(stack_plan: StackPlan) -> str:
    mirror, config = stack_plan.mirror, stack_plan.config
    if mirror is not None and not mirror.artifact_registry:
        rules = ", ".join(f"`{images.ECR_UPSTREAMS[r][0]}/` ({r})" for r in mirror.registries)
        none = "no ECR pull-through cache rule"
        cached = f"through ECR pull-through cache rules {rules} in {mirror.region}" if rules else none
        direct = "; ".join(f"{r} pulled directly: {why}" for r, why in mirror.direct.items())
        return cached + (f"; {direct}" if direct else "")
    if mirror is not None:
        repos = ", ".join(f"`{images.repository_id(r)}` ({r})" for r in mirror.registries)
        return (
            f"through Artifact Registry remote repositories {repos} in {mirror.region}, streamed on the"
            " accelerator pools (GKE image streaming serves only Artifact Registry images)"
        )
    return provider_of(config).unmirrored(config)
