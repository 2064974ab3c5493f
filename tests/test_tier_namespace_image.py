"""The tier's namespace names the image the servers run, not how the stack spells it (round 4, open in round 5: the
pinned image written without its registry host moved the namespace, and the tier went cold)."""

from __future__ import annotations

import dataclasses

import pytest

from components.catalog import versions
from components.specs.images import canonical_image
from components.specs.tier_namespace import tier_namespace
from stacks.config import loading
from stacks.planning.plan import plan
from tests.test_tier_namespace import IDENTITY


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("docker.io/vllm/vllm-openai:v0.26.0", "docker.io/vllm/vllm-openai:v0.26.0"),
        ("vllm/vllm-openai:v0.26.0", "docker.io/vllm/vllm-openai:v0.26.0"),
        ("index.docker.io/vllm/vllm-openai:v0.26.0", "docker.io/vllm/vllm-openai:v0.26.0"),
        ("busybox:1.37.0", "docker.io/library/busybox:1.37.0"),
        ("docker.io/busybox:1.37.0", "docker.io/library/busybox:1.37.0"),
        ("docker.io/library/busybox:1.37.0", "docker.io/library/busybox:1.37.0"),
        ("busybox", "docker.io/library/busybox:latest"),
        ("vllm/vllm-openai@sha256:" + "a" * 64, "docker.io/vllm/vllm-openai@sha256:" + "a" * 64),
        ("ghcr.io/llm-d/llm-d-rocm:v0.9.0", "ghcr.io/llm-d/llm-d-rocm:v0.9.0"),
        ("localhost:5000/vllm:v1", "localhost:5000/vllm:v1"),
        ("localhost:5000/vllm", "localhost:5000/vllm:latest"),  # a port is not a tag
        ("registry.example.com:443/a/b:c", "registry.example.com:443/a/b:c"),
    ],
)
def test_an_image_has_one_spelling(written: str, canonical: str) -> None:
    assert canonical_image(written) == canonical


def test_spellings_of_one_image_share_a_namespace_and_another_image_does_not() -> None:
    namespaces = {
        tier_namespace(dataclasses.replace(IDENTITY, image=image))
        for image in (
            "docker.io/vllm/vllm-openai:v0.26.0",
            "vllm/vllm-openai:v0.26.0",
            "index.docker.io/vllm/vllm-openai:v0.26.0",
        )
    }
    assert len(namespaces) == 1
    assert tier_namespace(dataclasses.replace(IDENTITY, image="docker.io/vllm/vllm-openai:v0.27.0")) not in namespaces
    assert tier_namespace(dataclasses.replace(IDENTITY, image="ghcr.io/vllm/vllm-openai:v0.26.0")) not in namespaces


def test_the_pinned_image_written_without_its_host_keeps_the_tier_warm() -> None:
    """gpu-vllm-native-fs with `cache.image` set to the pinned image's own reference without `docker.io/`."""
    pinned = versions.VLLM_CUDA_IMAGE
    assert pinned.startswith("docker.io/")
    before = plan(loading.load_preset("gpu-vllm-native-fs")).model_server.tier_identity
    after = plan(loading.load_preset("gpu-vllm-native-fs", [f"cache.image={pinned.removeprefix('docker.io/')}"]))
    assert before is not None and after.model_server.tier_identity == before
