"""Model-server manifests (plain dicts, camelCase): the family the spec's connector runs builds them."""

from __future__ import annotations

from components.manifest import Manifest
from components.specs.servers.base import ServerSpec
from components.specs.workload_type import WorkloadType

# One per role: the decode role keeps the bare key, the prefill role is `model-server-prefill`.
MODEL_SERVER = WorkloadType("llmd:model_server:ModelServer", "model-server")

__all__ = ["ServerSpec", "model_server_manifests"]


def model_server_manifests(spec: ServerSpec) -> list[Manifest]:
    """Every object one model-server role needs: ServiceAccount, workload, and what the connector adds (the
    plan's hardening pass locks every container down, stacks/planning/passes.py `hardened`)."""
    return spec.connector.manifests(spec)
