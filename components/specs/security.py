"""Least privilege for every container the program renders, and the one list of its exceptions.

Every container gets `allowPrivilegeEscalation: false`, every capability dropped and the runtime's
default seccomp profile, and runs as a non-root user, unless an `Exemption` below names it and
says why (each reason is the upstream guide's or the seed's). The policy rules read the same list,
so a container that runs as root, privileged or with an added capability without one is caught.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from components.catalog import labels
from components.catalog.accelerators import ACCELERATORS
from components.catalog.engines import ROOT_ENGINES
from components.manifest import Manifest

# A UID with no passwd entry in the images: HOME is then `/`, where the pods mount their writable
# caches (/.cache, /.triton, /.config), and vLLM's `USER` env stands in for the missing name.
NON_ROOT_UID = 2000
RDMA_RESOURCE = "rdma/ib"
NODE_SETUP_CONTAINER = "tpu-node-setup"
# Raised host limits the TPU runtime needs for its DMA mappings (the guide's privileged init container, which
# components/specs/servers/tpu.py renders; its exemption holds only for a container that runs exactly this).
# The DMA limit is written only where the vfio_iommu_type1 module is loaded (upstream guards it and warns):
# an unguarded write exits non-zero on a node without it, and the pod never leaves Init.
DMA_ENTRY_LIMIT = "/sys/module/vfio_iommu_type1/parameters/dma_entry_limit"
NODE_SETUP_SCRIPT = (
    "sysctl -w vm.max_map_count=33554432 && "
    f"if [ -e {DMA_ENTRY_LIMIT} ]; then echo 8000000 > {DMA_ENTRY_LIMIT}; "
    'else echo "WARNING: vfio_iommu_type1 is not loaded; dma_entry_limit left at its default"; fi'
)
NODE_SETUP_COMMAND = ("/bin/sh", "-c", NODE_SETUP_SCRIPT)
LUSTRE_PERMISSIONS_CONTAINER = "fix-lustre-permissions"
LMCACHE_SERVER_CONTAINER = "lmcache"
MODEL_FETCH_CONTAINER = "model-fetch"
# The router chart's tokenizer sidecar (`router.tokenizer`): the chart names it and mounts its cache.
CHART_TOKENIZER_CONTAINER = "vllm-render"


@dataclass(frozen=True)
class Subject:
    """One container, with the pod it runs in (labels and spec), as the exemptions see it."""

    labels: dict[str, str]
    pod: Manifest
    container: Manifest

    def mounts(self, path: str) -> bool:
        return any(m.get("mountPath") == path for m in self.container.get("volumeMounts") or [])

    def requests(self, resource: str) -> bool:
        return resource in ((self.container.get("resources") or {}).get("requests") or {})

    def env(self, name: str) -> bool:
        return any(e.get("name") == name for e in self.container.get("env") or [])


@dataclass(frozen=True)
class Exemption:
    name: str
    reason: str
    applies: Callable[[Subject], bool]
    root: bool = False
    privileged: bool = False
    capabilities: tuple[str, ...] = ()
    # An accelerator profile's exemption (its `root_reason`): it holds only for a pod that also holds that
    # profile's devices (the policy rule `root-containers` checks them; the label alone is no reason).
    profile: str | None = None


def _accelerator(key: str) -> Callable[[Subject], bool]:
    """A model-server pod of this accelerator profile (the key its pods carry)."""
    return lambda s: s.labels.get(labels.ACCELERATOR_PROFILE_LABEL) == key


EXEMPTIONS: tuple[Exemption, ...] = (
    Exemption(
        "tpu-node-setup",
        "raises vm.max_map_count and the vfio DMA entry limit on the host for the TPU runtime"
        " (the guide's privileged init container)",
        lambda s: (
            s.container.get("name") == NODE_SETUP_CONTAINER
            and list(s.container.get("command") or []) == list(NODE_SETUP_COMMAND)
            and not s.container.get("args")
        ),
        root=True,
        privileged=True,
    ),
    Exemption(
        "lmcache-server",
        "opens every GPU of its node through the NVIDIA runtime as the image's root user; `lmcache.privileged`"
        " where NVML cannot see the devices (the seed: 'If a pod prints an NVML error ... securityContext.privileged')",
        lambda s: (
            s.container.get("name") == LMCACHE_SERVER_CONTAINER
            and str((s.container.get("command") or [""])[0]).endswith("/lmcache")
        ),
        root=True,
        privileged=True,
    ),
    Exemption(
        "lustre-permissions",
        "opens the root-owned Lustre mount to the pod's group: chmod on files it does not own"
        " (the guide's gke overlays)",
        lambda s: s.container.get("name") == LUSTRE_PERMISSIONS_CONTAINER,
        root=True,
        capabilities=("FOWNER",),
    ),
    Exemption(
        "shared-tier-writer",
        "writes the shared filesystem tier, whose root the storage backend owns"
        " (the guide runs native fs with runAsUser 0)",
        lambda s: s.mounts(labels.FILES_STORAGE_MOUNT),
        root=True,
    ),
    Exemption(
        "model-cache-fetch",
        "writes the weights into the model cache's volume, whose root the storage backend owns, and opens the"
        " directories it creates to the model servers' users (chmod)",
        lambda s: s.container.get("name") == MODEL_FETCH_CONTAINER,
        root=True,
        capabilities=("DAC_OVERRIDE", "FOWNER"),
    ),
    Exemption(
        "rdma",
        "registers memory with the RDMA NIC (MooncakeStore): page pinning needs CAP_IPC_LOCK, which Kubernetes"
        " grants only to root (no ambient capabilities)",
        lambda s: s.requests(RDMA_RESOURCE),
        root=True,
        capabilities=("IPC_LOCK",),
    ),
    # An accelerator whose guide runs its image as root: the profile says why (`root_reason`).
    *(
        Exemption(profile.key, profile.root_reason, _accelerator(profile.key), root=True, profile=profile.key)
        for profile in ACCELERATORS.values()
        if profile.root_reason
    ),
    Exemption(
        "sglang",
        "the guide runs SGLang as the image's root user; its JIT caches under $HOME (/.cache, /.triton) have no"
        " writable mount",
        lambda s: s.labels.get(labels.ENGINE_TYPE_LABEL) in ROOT_ENGINES,
        root=True,
    ),
    Exemption(
        "router-tokenizer",
        "the router chart mounts the tokenizer sidecar's Hugging Face cache at /root/.cache/huggingface, under the"
        " image's root home (mode 0700), which only its root user can reach",
        lambda s: s.container.get("name") == CHART_TOKENIZER_CONTAINER,
        root=True,
    ),
    Exemption(
        "lmcache-client",
        "the seed's decode pod runs lmcache/vllm-openai as its root user, like the node's LMCache server it shares"
        " KV with over CUDA IPC, and mounts no writable home",
        lambda s: s.env("LMCACHE_KV_CONFIG"),
        root=True,
    ),
)
PRIVILEGED_CONTAINERS = (NODE_SETUP_CONTAINER, LMCACHE_SERVER_CONTAINER)


def exemptions(subject: Subject) -> list[Exemption]:
    return [e for e in EXEMPTIONS if e.applies(subject)]


def container_context(subject: Subject) -> Manifest:
    """The securityContext a container gets: hardened, loosened only by the exemptions that name it.

    A privileged container keeps only `privileged: true` (the API rejects it beside
    allowPrivilegeEscalation false, and dropping capabilities would not bind it).
    """
    current = subject.container.get("securityContext") or {}
    found = exemptions(subject)
    if current.get("privileged"):
        if not any(e.privileged for e in found):
            raise ValueError(f"container {subject.container.get('name')} is privileged without an exemption")
        return {"privileged": True}
    capabilities: Manifest = {"drop": ["ALL"]}
    added = sorted({c for e in found for c in e.capabilities})
    if added:
        capabilities["add"] = added
    user: Manifest = (
        {"runAsUser": 0}
        if any(e.root for e in found)
        else {"runAsNonRoot": True, "runAsUser": current.get("runAsUser", NON_ROOT_UID)}
    )
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": capabilities,
        "seccompProfile": {"type": "RuntimeDefault"},
        **user,
    }


def harden_pod(template: Manifest, api_access: bool = False) -> Manifest:
    """A pod template with every container hardened, and no service-account token unless it calls the API."""
    out = copy.deepcopy(template)
    spec = out.setdefault("spec", {})
    pod_labels = dict((out.get("metadata") or {}).get("labels") or {})
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            container["securityContext"] = container_context(Subject(pod_labels, spec, container))
    spec["automountServiceAccountToken"] = api_access
    return out


def harden(manifest: Manifest, api_access: bool = False) -> Manifest:
    """The same object with its pod templates hardened (Deployment, DaemonSet, Job, LeaderWorkerSet)."""
    spec = manifest.get("spec") or {}
    if "template" in spec and manifest["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
        return {**manifest, "spec": {**spec, "template": harden_pod(spec["template"], api_access)}}
    lws = spec.get("leaderWorkerTemplate")
    if manifest["kind"] == "LeaderWorkerSet" and lws:
        hardened = {k: harden_pod(v, api_access) if k.endswith("Template") else v for k, v in lws.items()}
        return {**manifest, "spec": {**spec, "leaderWorkerTemplate": hardened}}
    return manifest


def harden_chart_object(manifest: Manifest) -> Manifest:
    """A chart-rendered object with its pods hardened like the program's own: the router chart sets no
    securityContext on the EPP and tokenizer containers and none by default on Envoy. A pod that runs under
    a service account (the EPP watches pods and its InferencePool) keeps its token."""
    template = (manifest.get("spec") or {}).get("template") or {}
    api_access = bool((template.get("spec") or {}).get("serviceAccountName"))
    return harden(manifest, api_access=api_access)
