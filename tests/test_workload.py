"""The one workload component: each stack workload keeps its type token (so its URNs stay), declares its
manifests as children in order and registers its objects as outputs."""

from __future__ import annotations

import asyncio
from typing import Any

import pulumi
import pytest
from pulumi.runtime import settings

from components.image_prepull import ImagePrepull
from components.lmcache_server import LMCacheServer
from components.model_cache import ModelCache
from components.model_server import ModelServer
from components.monitoring import Monitoring
from components.mooncake import MooncakeClient, MooncakeMaster
from components.storage import SharedStorage
from components.verification_job import VerificationJob
from components.workload import Workload, WorkloadArgs

# The tokens the URNs of every deployed stack carry: changing one needs an alias.
TOKENS = {
    ImagePrepull: "llmd:image_prepull:ImagePrepull",
    LMCacheServer: "llmd:lmcache_server:LMCacheServer",
    ModelCache: "llmd:model_cache:ModelCache",
    ModelServer: "llmd:model_server:ModelServer",
    Monitoring: "llmd:monitoring:Monitoring",
    MooncakeClient: "llmd:mooncake:MooncakeClient",
    MooncakeMaster: "llmd:mooncake:MooncakeMaster",
    SharedStorage: "llmd:storage:SharedStorage",
    VerificationJob: "llmd:verification:VerificationJob",
}


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.registered: list[tuple[str, str]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.registered.append((args.typ, args.name))
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


def _config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": {}}


def test_every_workload_keeps_its_type_token() -> None:
    assert {cls: cls.type_token for cls in TOKENS} == TOKENS
    assert set(TOKENS) == set(Workload.__subclasses__())


@pytest.mark.parametrize("cls", list(TOKENS), ids=lambda c: c.__name__)
def test_a_workload_declares_its_manifests_and_names_them(cls: type[Workload]) -> None:
    asyncio.set_event_loop(asyncio.new_event_loop())
    settings.ROOT.set(None)
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, project="llmd", stack="t", preview=False)
    made: list[Workload] = []
    manifests = [_config_map("only")] if cls is SharedStorage else [_config_map("a"), _config_map("b")]

    def program() -> None:
        made.append(cls("w", WorkloadArgs(manifests)))

    pulumi.runtime.test(program)()  # type: ignore[no-untyped-call]
    [workload] = made
    assert workload.objects == [f"ConfigMap/{m['metadata']['name']}" for m in manifests]
    assert (TOKENS[cls], "w") in mocks.registered
    assert [n for t, n in mocks.registered if t == "kubernetes:core/v1:ConfigMap"] == [
        f"w-{m['metadata']['name']}" for m in manifests
    ]
    if isinstance(workload, ModelServer):
        assert workload.workload_name == "b"  # the workload comes last
    if isinstance(workload, SharedStorage):
        assert workload.claim_name == "only"
