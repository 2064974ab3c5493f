"""Model-server manifests per accelerator family and connector (plain dicts, camelCase)."""

from __future__ import annotations

from components.manifest import Manifest
from components.specs.security import harden_all
from components.specs.servers.base import ServerSpec
from components.specs.servers.lmcache_mp import lmcache_mp_manifests
from components.specs.servers.sglang import sglang_manifests
from components.specs.servers.tpu import tpu_manifests, tpu_multihost_manifests
from components.specs.servers.vllm import vllm_manifests
from components.specs.workloads import WorkloadType

# One per role: the decode role keeps the bare key, the prefill role is `model-server-prefill`.
MODEL_SERVER = WorkloadType("llmd:model_server:ModelServer", "model-server")

__all__ = ["ServerSpec", "model_server_manifests"]


def model_server_manifests(spec: ServerSpec) -> list[Manifest]:
    """Every object one model-server role needs: ServiceAccount, workload, and what the connector adds,
    with every container locked down (components.specs.security)."""
    return harden_all(_manifests(spec))


def _manifests(spec: ServerSpec) -> list[Manifest]:
    if spec.accelerator.is_tpu:
        return tpu_multihost_manifests(spec) if spec.host_type == "multi-host" else tpu_manifests(spec)
    if spec.connector == "lmcache-server":
        return lmcache_mp_manifests(spec)
    if spec.server == "sglang":
        return sglang_manifests(spec)
    return vllm_manifests(spec)
