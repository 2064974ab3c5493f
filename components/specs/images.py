"""Images pulled fast and once: the registry mirror of a created cluster, and rewriting every image to it.

GKE streams images (image streaming: the container starts before its layers are downloaded) only from
Artifact Registry, and the stacks pull from Docker Hub and ghcr.io. On a created GKE cluster, each
upstream registry the stack uses gets an Artifact Registry remote repository (a pull-through cache) in
the cluster's region, and every image the program renders is referenced through it: the first pull
fills the cache, every later node streams from it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import Any

from components.manifest import Manifest

DOCKER_HUB = "docker.io"
# Artifact Registry's preset upstream for Docker Hub; any other registry is a custom remote by URI.
AR_DOCKER_HUB = "DOCKER_HUB"


def split_image(image: str) -> tuple[str, str]:
    """`ghcr.io/llm-d/x:v1` -> (`ghcr.io`, `llm-d/x:v1`); Docker Hub's short forms get their full path."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    path = image if rest else f"library/{image}"  # `busybox` is `library/busybox`
    return DOCKER_HUB, path


# Docker's own short forms (distribution/reference normalize.go): its legacy index host is Docker Hub, an
# image without a tag or digest is `latest`.
LEGACY_DOCKER_HUB = "index.docker.io"
DEFAULT_TAG = "latest"


def canonical_image(image: str) -> str:
    """One spelling per image, as the runtime resolves it: `vllm/vllm-openai:v1`, `index.docker.io/vllm/vllm-openai:v1`
    and `docker.io/vllm/vllm-openai:v1` are one image; `busybox:1.37` is `docker.io/library/busybox:1.37`; no tag and
    no digest is `:latest`."""
    registry, path = split_image(image)
    if registry == LEGACY_DOCKER_HUB:
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"  # `docker.io/busybox` is `docker.io/library/busybox`
    name = path.split("@", 1)[0]
    if "@" not in path and ":" not in name.rsplit("/", 1)[-1]:
        path = f"{path}:{DEFAULT_TAG}"
    return f"{registry}/{path}"


def repository_id(registry: str) -> str:
    """The remote repository's id: `docker.io` -> `docker-io` (lower-case letters, digits and hyphens)."""
    return re.sub(r"[^a-z0-9-]+", "-", registry.lower()).strip("-")


def ar_prefix(registry: str, region: str, project: str) -> str:
    return f"{region}-docker.pkg.dev/{project}/{repository_id(registry)}"


def mirrored(image: str, region: str, project: str) -> str:
    registry, path = split_image(image)
    return f"{ar_prefix(registry, region, project)}/{path}"


def remote_repository_args(registry: str, region: str, project: str) -> dict[str, Any]:
    """A Docker-format remote repository caching one upstream registry."""
    upstream: dict[str, Any] = (
        {"public_repository": AR_DOCKER_HUB}
        if registry == DOCKER_HUB
        else {"custom_repository": {"uri": f"https://{registry}"}}
    )
    return {
        "repository_id": repository_id(registry),
        "project": project,
        "location": region,
        "format": "DOCKER",
        "mode": "REMOTE_REPOSITORY",
        "description": f"pull-through cache of {registry} for the llm-d tiered prefix cache",
        "remote_repository_config": {"description": registry, "docker_repository": upstream},
    }


def _pod_specs(manifest: Manifest) -> Iterator[Manifest]:
    spec = manifest.get("spec") or {}
    if "template" in spec:
        yield spec["template"].get("spec") or {}
    lws = spec.get("leaderWorkerTemplate") or {}
    for key in ("leaderTemplate", "workerTemplate"):
        if key in lws:
            yield lws[key].get("spec") or {}


def images(manifests: list[Manifest]) -> list[str]:
    return sorted(
        {
            str(c["image"])
            for m in manifests
            for pod in _pod_specs(m)
            for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
        }
    )


def rewrite(manifests: list[Manifest], to: Callable[[str], str]) -> list[Manifest]:
    """The same objects with every container image mapped through `to`."""
    out = copy.deepcopy(manifests)
    for manifest in out:
        for pod in _pod_specs(manifest):
            for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
                container["image"] = to(str(container["image"]))
    return out


# ECR pull-through cache: upstream registry -> (repository prefix, upstream URL, needs a credential).
# Docker Hub and ghcr.io admit a rule only with a Secrets Manager secret named `ecr-pullthroughcache/...`.
ECR_UPSTREAMS: dict[str, tuple[str, str, bool]] = {
    "public.ecr.aws": ("ecr-public", "public.ecr.aws", False),
    "registry.k8s.io": ("k8s", "registry.k8s.io", False),
    "quay.io": ("quay", "quay.io", False),
    DOCKER_HUB: ("docker-hub", "registry-1.docker.io", True),
    "ghcr.io": ("github", "ghcr.io", True),
}
# What the nodes need to fill the cache on a first pull (AWS: pull-through-cache-iam).
ECR_PULL_THROUGH_ACTIONS = ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"]


def ecr_prefix(registry: str, region: str, account: str) -> str:
    return f"{account}.dkr.ecr.{region}.amazonaws.com/{ECR_UPSTREAMS[registry][0]}"


def ecr_cached(registry: str, credentials: dict[str, str]) -> str | None:
    """Why `registry` is pulled directly on EKS, or None when a pull-through cache rule serves it."""
    if registry not in ECR_UPSTREAMS:
        return "ECR has no pull-through cache for it"
    if ECR_UPSTREAMS[registry][2] and registry not in credentials:
        return "ECR caches it only with a Secrets Manager credential (images.ecr_credentials)"
    return None


def pull_through_rule_args(registry: str, credentials: dict[str, str]) -> dict[str, Any]:
    prefix, upstream, _ = ECR_UPSTREAMS[registry]
    args: dict[str, Any] = {"ecr_repository_prefix": prefix, "upstream_registry_url": upstream}
    if registry in credentials:
        args["credential_arn"] = credentials[registry]
    return args


def pull_through_policy() -> dict[str, Any]:
    """The node role's permission to fill the cache on a first pull."""
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ECR_PULL_THROUGH_ACTIONS, "Resource": "*"}],
    }
