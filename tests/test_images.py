"""Images pulled fast and once: created GKE clusters mirror every upstream registry the stack uses in
Artifact Registry, reference every image through it, and stream images on the accelerator pools."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog import versions
from components.specs import images
from stacks.planning.mirror import Mirror, router_values_through
from tests.helm import CHART_VERSION, ChartInputs, chart_inputs, template
from tests.helpers import manifests, rendered, resources

AR = "us-central1-docker.pkg.dev/my-gcp-project/"
REPOSITORY = "gcp:artifactregistry/repository:Repository"


def _rows(name: str, *overrides: str) -> list[dict[str, Any]]:
    return resources(rendered(name, tuple(overrides)))


def _images(name: str, *overrides: str) -> list[str]:
    return images.images(manifests(rendered(name, tuple(overrides))))


@pytest.mark.parametrize(
    ("image", "registry", "path"),
    [
        ("docker.io/vllm/vllm-openai:v0.26.0", "docker.io", "vllm/vllm-openai:v0.26.0"),
        ("lmcache/vllm-openai:v0.5.6", "docker.io", "lmcache/vllm-openai:v0.5.6"),
        ("busybox:1.37.0", "docker.io", "library/busybox:1.37.0"),
        ("ghcr.io/llm-d/llm-d-rocm:v0.9.0", "ghcr.io", "llm-d/llm-d-rocm:v0.9.0"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io", "pause:3.10"),
        ("localhost:5000/x@sha256:" + "a" * 64, "localhost:5000", "x@sha256:" + "a" * 64),
    ],
)
def test_an_image_splits_into_its_registry_and_path(image: str, registry: str, path: str) -> None:
    assert images.split_image(image) == (registry, path)


@pytest.mark.parametrize("name", ["gke-h100-lustre", "gke-tpu-v7-multi-host", "gpu-sglang-native-fs-gke"])
def test_created_gke_clusters_pull_every_image_through_a_remote_repository_per_registry(name: str) -> None:
    rows = _rows(name)
    if name == "gpu-sglang-native-fs-gke":  # an existing GKE cluster: nothing to create, images from upstream
        assert not [r for r in rows if r["type"] == REPOSITORY]
        assert not any(i.startswith(AR) for i in _images(name))
        return
    used = _images(name)
    assert used and all(i.startswith(AR) for i in used)
    repositories = {r["inputs"]["repositoryId"]: r["inputs"] for r in rows if r["type"] == REPOSITORY}
    assert {i.removeprefix(AR).split("/", 1)[0] for i in used} <= set(repositories)
    assert repositories["docker-io"]["remoteRepositoryConfig"]["dockerRepository"] == {"publicRepository": "DOCKER_HUB"}
    assert repositories["ghcr-io"]["remoteRepositoryConfig"]["dockerRepository"] == {
        "customRepository": {"uri": "https://ghcr.io"}
    }
    assert all(r["mode"] == "REMOTE_REPOSITORY" and r["location"] == "us-central1" for r in repositories.values())
    readers = [r["inputs"] for r in rows if r["type"].endswith("repositoryIamMember:RepositoryIamMember")]
    assert {r["repository"] for r in readers} == set(repositories)
    assert all(r["role"] == "roles/artifactregistry.reader" and "-compute@" in r["member"] for r in readers)
    provider = next(r for r in rows if r["type"] == "pulumi:providers:kubernetes")
    assert all(f"{REPOSITORY}::llmd-mirror-{repo}" in provider["dependsOn"] for repo in repositories)
    chart = next(r for r in rows if r["type"] == "kubernetes:helm.sh/v4:Chart" and r["name"] == "llmd-router-chart")
    assert chart["inputs"]["values"]["router"]["epp"]["image"]["registry"] == f"{AR}ghcr-io/llm-d"


@pytest.mark.parametrize("name", ["gke-h100-lustre", "gke-tpu-v7-multi-host", "gke-tpu-v6e"])
def test_accelerator_pools_stream_images_and_the_system_pool_does_not_need_to(name: str) -> None:
    pools = {r["name"]: r["inputs"] for r in _rows(name) if r["type"] == "gcp:container/nodePool:NodePool"}
    accelerator = {n: p for n, p in pools.items() if not n.endswith("-system")}
    assert accelerator
    assert all(p["nodeConfig"]["gcfsConfig"] == {"enabled": True} for p in accelerator.values())
    off = {r["name"]: r["inputs"] for r in _rows(name, "images.mirror=off") if r["type"].endswith("NodePool")}
    assert all("gcfsConfig" not in p["nodeConfig"] for p in off.values())


def test_streaming_pools_wait_for_the_container_file_system_api() -> None:
    """GKE streams images only where the Container File System API is enabled (its requirements)."""
    rows = _rows("gke-h100-lustre")
    (api,) = [r for r in rows if r["type"] == "gcp:projects/service:Service" and "containerfilesystem" in r["name"]]
    assert api["inputs"]["service"] == "containerfilesystem.googleapis.com"
    assert api["inputs"]["disableOnDestroy"] is False
    urn = f"{api['type']}::{api['name']}"
    pools = [r for r in rows if r["type"] == "gcp:container/nodePool:NodePool" and not r["name"].endswith("-system")]
    assert pools and all(urn in p["dependsOn"] for p in pools)
    off = _rows("gke-h100-lustre", "images.mirror=off")
    assert not [r for r in off if "containerfilesystem" in r["name"]]


def test_mirror_off_pulls_from_upstream() -> None:
    assert not [r for r in _rows("gke-h100-lustre", "images.mirror=off") if r["type"] == REPOSITORY]
    assert "docker.io/vllm/vllm-openai:v0.26.0" in _images("gke-h100-lustre", "images.mirror=off")


ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com/"
RULE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"
HUB_SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/docker-hub-AbCdEf"
GHCR_SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/github-AbCdEf"
CREDENTIALS = f"images.ecr_credentials={{docker.io: '{HUB_SECRET}', ghcr.io: '{GHCR_SECRET}'}}"


def _summary_images(name: str, *overrides: str) -> str:
    summary = rendered(name, tuple(overrides)).summary
    return next(line for line in summary.splitlines() if line.startswith("| images |"))


def test_created_eks_clusters_without_credentials_pull_docker_hub_and_ghcr_directly_and_say_why() -> None:
    assert not [r for r in _rows("eks-h100-efs") if r["type"] in (RULE, "aws:iam/rolePolicy:RolePolicy")]
    assert not any(i.startswith(ECR) for i in _images("eks-h100-efs"))
    row = _summary_images("eks-h100-efs")
    assert "docker.io pulled directly" in row and "ghcr.io pulled directly" in row
    assert "Secrets Manager" in row


def test_created_eks_clusters_pull_through_ecr_rules_with_the_given_credentials() -> None:
    rows = _rows("eks-h100-efs", CREDENTIALS)
    rules = {r["inputs"]["ecrRepositoryPrefix"]: r["inputs"] for r in rows if r["type"] == RULE}
    assert rules == {
        "docker-hub": {
            "ecrRepositoryPrefix": "docker-hub",
            "upstreamRegistryUrl": "registry-1.docker.io",
            "credentialArn": HUB_SECRET,
        },
        "github": {"ecrRepositoryPrefix": "github", "upstreamRegistryUrl": "ghcr.io", "credentialArn": GHCR_SECRET},
    }
    used = _images("eks-h100-efs", CREDENTIALS)
    assert used and all(i.startswith(ECR) for i in used)
    assert f"{ECR}docker-hub/vllm/vllm-openai:v0.26.0" in used
    policy = next(r for r in rows if r["type"] == "aws:iam/rolePolicy:RolePolicy")
    statement = json.loads(policy["inputs"]["policy"])["Statement"]
    assert statement[0]["Action"] == ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"]
    provider = next(r for r in rows if r["type"] == "pulumi:providers:kubernetes")
    assert all(f"{RULE}::llmd-mirror-{repo}" in provider["dependsOn"] for repo in ("docker-io", "ghcr-io"))
    chart = next(r for r in rows if r["type"] == "kubernetes:helm.sh/v4:Chart" and r["name"] == "llmd-router-chart")
    assert chart["inputs"]["values"]["router"]["epp"]["image"]["registry"] == f"{ECR}github/llm-d"
    assert "through ECR pull-through cache rules" in _summary_images("eks-h100-efs", CREDENTIALS)


def test_eks_mirror_off_or_without_an_account_creates_no_rule_and_grants_nothing() -> None:
    for overrides in [(CREDENTIALS, "images.mirror=off"), (CREDENTIALS, "cluster.eks.account_id=null")]:
        rows = _rows("eks-h100-efs", *overrides)
        assert not [r for r in rows if r["type"] in (RULE, "aws:iam/rolePolicy:RolePolicy")]
        assert "docker.io/vllm/vllm-openai:v0.26.0" in _images("eks-h100-efs", *overrides)


@pytest.mark.parametrize(
    ("registry", "prefix", "upstream"),
    [
        ("quay.io", "quay", "quay.io"),
        ("registry.k8s.io", "k8s", "registry.k8s.io"),
        ("public.ecr.aws", "ecr-public", "public.ecr.aws"),
    ],
)
def test_ecr_caches_credential_free_upstreams_without_a_secret(registry: str, prefix: str, upstream: str) -> None:
    assert images.ecr_cached(registry, {}) is None
    assert images.pull_through_rule_args(registry, {}) == {
        "ecr_repository_prefix": prefix,
        "upstream_registry_url": upstream,
    }
    assert images.ecr_cached("docker.io", {}) is not None and images.ecr_cached("nvcr.io", {}) is not None


def test_ecr_credentials_must_be_pull_through_cache_secrets() -> None:
    bad = "images.ecr_credentials={docker.io: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:hub'}"
    with pytest.raises(Exception, match="ecr-pullthroughcache"):
        rendered("eks-h100-efs", (bad,))


def _chart_images(objects: list[dict[str, Any]]) -> dict[str, str]:
    """Container name -> image, over every pod template the chart renders."""
    return {
        c["name"]: c["image"]
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet")
        for c in [
            *o["spec"]["template"]["spec"].get("initContainers", []),
            *o["spec"]["template"]["spec"]["containers"],
        ]
    }


@pytest.mark.parametrize("chart", [CHART_VERSION, "v0"])
def test_the_images_the_program_mirrors_are_the_ones_the_real_chart_renders(chart: str) -> None:
    """Without a mirror, the chart's own defaults: the program's record of them (the images it routes
    through a mirror) must be what the chart really uses, or a mirrored stack would pin other images."""
    found = _chart_images(template(chart_inputs("gpu-vllm-lmcache-server-routing"), chart).objects)
    envoy = [i for i in found.values() if "envoy" in i]
    assert envoy == [versions.CHART_ENVOY_IMAGE]
    tokenizer = [i for i in found.values() if "vllm-openai-cpu" in i]
    assert [i.rsplit(":", 1)[0] for i in tokenizer] == [
        f"{versions.CHART_TOKENIZER_REGISTRY}/{versions.CHART_TOKENIZER_REPOSITORY}"
    ]
    assert [i.rsplit(":", 1)[0] for i in found.values() if "endpoint-picker" in i] == [versions.EPP_IMAGE_REPOSITORY]


MIRRORS = {
    "gke": (Mirror("us-central1", "my-gcp-project", ["docker.io", "ghcr.io"]), AR),
    "eks": (
        Mirror("us-east-1", "123456789012", ["docker.io", "ghcr.io"], cloud="eks"),
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/",
    ),
}


@pytest.mark.parametrize("mirror", MIRRORS)
@pytest.mark.parametrize("chart", [CHART_VERSION, "v0"])
@pytest.mark.parametrize("name", ["gpu-vllm-lmcache-server-routing", "gpu-vllm-native-cpu"])
def test_through_a_mirror_every_image_the_real_chart_renders_comes_through_it(
    name: str, chart: str, mirror: str
) -> None:
    """EPP, Envoy and the tokenizer sidecar: Helm renders the real chart with the mirrored values."""
    through, prefix = MIRRORS[mirror]
    inputs = chart_inputs(name)
    values = router_values_through(inputs.values, through)
    found = _chart_images(template(ChartInputs(inputs.release, inputs.namespace, values), chart).objects)
    assert len(found) >= 2
    assert all(i.startswith(prefix) for i in found.values()), found


def test_a_registry_the_mirror_does_not_serve_keeps_the_charts_image() -> None:
    """ECR without Docker Hub credentials: Envoy and the tokenizer come from Docker Hub, as the chart has them."""
    ghcr_only = Mirror("us-east-1", "123456789012", ["ghcr.io"], cloud="eks")
    inputs = chart_inputs("gpu-vllm-lmcache-server-routing")
    values = router_values_through(inputs.values, ghcr_only)
    assert "image" not in values["router"]["proxy"]
    assert "registry" not in values["router"]["tokenizer"].get("image", {})
    found = _chart_images(template(ChartInputs(inputs.release, inputs.namespace, values)).objects)
    assert versions.CHART_ENVOY_IMAGE in found.values()
    assert any(i.startswith("123456789012.dkr.ecr.us-east-1.amazonaws.com/github/") for i in found.values())


def test_created_gke_clusters_mirror_the_router_charts_images() -> None:
    values = json.loads(json.dumps(next(
        r["inputs"]["values"] for r in _rows("gke-h100-lustre")
        if r["type"] == "kubernetes:helm.sh/v4:Chart" and r["name"] == "llmd-router-chart"
    )))  # fmt: skip
    assert values["router"]["proxy"]["image"] == f"{AR}docker-io/envoyproxy/envoy:distroless-v1.33.2"
