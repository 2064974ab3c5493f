"""Rules over what the stack pulls: images and charts pinned and from allowed registries, the image
pre-pull complete and placed, model weights fetched once onto shared storage."""

from __future__ import annotations

import re
from dataclasses import dataclass

from components.catalog import versions
from components.catalog.labels import IMAGE_PREPULL, WORKLOAD_LABEL
from policies.checks.inventory import (
    accelerator_of,
    router_charts,
)
from policies.checks.rule_types import NoConfig, Settings, Violation, setting
from policies.resources import (
    CHART_TYPE,
    Resource,
    image_tag,
    model_source,
    pods,
    rwx_claims,
)


def weights_fetched_once(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A model server that loads its model by Hub id downloads the weights in every pod, on every restart;
    a stack with a ReadWriteMany claim can fetch them once onto it (`model_cache`)."""
    shared = sorted(rwx_claims(resources))
    if not shared:
        return []
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            source = model_source(container)
            if source and not source.startswith("/"):
                out.append(
                    Violation(
                        pod.owner,
                        f"container {container.get('name')} downloads {source} from Hugging Face in every pod"
                        f" while the stack has the ReadWriteMany claim {', '.join(shared)}: set model_cache to"
                        " fetch the weights once onto it",
                    )
                )
    return out


def image_prepull(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """An image pre-pull DaemonSet runs on the serving pool only (unplaced, it pulls every 10-20 GB image onto
    every node of the cluster) and pulls every image the accelerator pods run (else a node meets one cold)."""
    serving = {
        str(container.get("image"))
        for pod in pods(resources)
        for container in pod.containers(init=False)
        if accelerator_of(resources, pod, container) is not None
    }
    out = []
    for pod in pods(resources):
        if pod.labels.get(WORKLOAD_LABEL) != IMAGE_PREPULL:
            continue
        if not pod.spec.get("nodeSelector") and not (pod.spec.get("affinity") or {}).get("nodeAffinity"):
            out.append(
                Violation(pod.owner, "pulls its images onto every node of the cluster: place it on the serving pool")
            )
        missing = sorted(serving - {str(c.get("image")) for c in pod.containers()})
        if missing:
            out.append(Violation(pod.owner, f"does not pull {', '.join(missing)}, which the model servers run"))
    return out


MUTABLE_TAGS = ("latest", "stable", "main", "master", "nightly", "dev", "edge")  # compared case-insensitively
# OCI digests this rule accepts: the algorithm and its full lower-case hex length.
DIGEST = re.compile(r"^@(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$")


def _unpinned(image: str) -> str | None:
    """Why an image reference is not pinned (None: pinned to a release tag or a well-formed digest)."""
    tag = image_tag(image)
    if tag is None:
        return "has no tag"
    if tag.startswith("@"):
        return None if DIGEST.match(tag) else "has a malformed digest"
    return f"uses the floating tag {tag}" if tag.lower() in MUTABLE_TAGS else None


@dataclass(frozen=True)
class ImagesPinnedConfig(Settings):
    allow_mutable_tags: bool = setting("allowMutableTags", False, "skip the rule: a floating tag is allowed")


def images_pinned(resources: list[Resource], config: ImagesPinnedConfig) -> list[Violation]:
    if config.allow_mutable_tags:
        return []
    out = []
    for pod in pods(resources):
        for c in pod.containers():
            why = _unpinned(str(c.get("image", "")))
            if why:
                out.append(
                    Violation(pod.owner, f"image {c.get('image')} is not pinned to a release tag or digest: {why}")
                )
    for chart in router_charts(resources):
        version = str(chart.props.get("version") or "")
        source = str(chart.props.get("chart") or "")
        if not version and versions.is_local_chart(source):
            # A packaged chart on disk: Helm takes no version for it, its file name carries it.
            version = re.sub(r"^.*-(v?[0-9]+\.[0-9]+\.[0-9]+)\.tgz$", r"\1", source, flags=re.ASCII)
            version = version if version != source else ""
        if not version or version.lstrip("v").count(".") < 2:
            out.append(Violation(chart, f"chart version {version or '(none)'} is not a pinned release"))
    return out


CHART_REGISTRIES_ALLOWED = versions.CHART_REPOSITORIES


@dataclass(frozen=True)
class ChartRegistriesConfig(Settings):
    allowed_chart_registries: tuple[str, ...] = setting(
        "allowedChartRegistries", CHART_REGISTRIES_ALLOWED, "registry prefixes a chart may come from"
    )
    allow_local_charts: bool = setting(
        "allowLocalCharts",
        False,
        "a packaged chart on disk may be installed (`./run check` sets it when the stack names router.chart_file)",
    )


def charts_from_allowed_registries(resources: list[Resource], config: ChartRegistriesConfig) -> list[Violation]:
    allowed = config.allowed_chart_registries
    out = []
    for r in resources:
        if r.type != CHART_TYPE:
            continue
        chart = str(r.props.get("chart") or "")
        if versions.is_local_chart(chart):
            if not config.allow_local_charts:
                out.append(Violation(r, f"chart {chart} is a local file; allow it with the pack's allowLocalCharts"))
            continue
        source = chart if "://" in chart else str((r.props.get("repositoryOpts") or {}).get("repo") or "")
        if not source or not any(source == a.rstrip("/") or source.startswith(a) for a in allowed):
            out.append(Violation(r, f"chart {chart} comes from {source or 'no registry'}, not one of {list(allowed)}"))
    return out
