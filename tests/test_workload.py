"""The one workload component: each stack workload keeps its type token (so its URNs stay), declares its
manifests as children in order and registers its objects (and what it exports) as outputs."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
from typing import Any

import pulumi
import pytest
from pulumi.runtime import settings

import components.specs
from components.specs import (
    cache_annotator,
    gateway,
    keda,
    lmcache,
    model_cache,
    monitoring,
    mooncake,
    prepull,
    storage,
    tier_evictor,
    verification,
)
from components.specs.servers import MODEL_SERVER
from components.specs.workloads import Workload, WorkloadType, ordered
from components.workload import WorkloadComponent

# The tokens the URNs of every deployed stack carry: changing one needs an alias. Written out, not read back.
TOKENS = {
    prepull.WORKLOAD: ("llmd:image_prepull:ImagePrepull", "image-prepull"),
    lmcache.SERVER_WORKLOAD: ("llmd:lmcache_server:LMCacheServer", "lmcache-server"),
    model_cache.WORKLOAD: ("llmd:model_cache:ModelCache", "model-cache"),
    MODEL_SERVER: ("llmd:model_server:ModelServer", "model-server"),
    monitoring.WORKLOAD: ("llmd:monitoring:Monitoring", "monitoring"),
    mooncake.CLIENT_WORKLOAD: ("llmd:mooncake:MooncakeClient", "mooncake-client"),
    mooncake.MASTER_WORKLOAD: ("llmd:mooncake:MooncakeMaster", "mooncake-master"),
    storage.WORKLOAD: ("llmd:storage:SharedStorage", "storage"),
    verification.WORKLOAD: ("llmd:verification:VerificationJob", "verification"),
    tier_evictor.WORKLOAD: ("llmd:tier_evictor:TierEvictor", "tier-evictor"),
    keda.WORKLOAD: ("llmd:autoscaling:ModelServerScaler", "autoscaling"),
    gateway.ROUTE_WORKLOAD: ("llmd:gateway:ModelRoute", "gateway-route"),
    cache_annotator.WORKLOAD: ("llmd:cache_annotator:CacheAnnotator", "cache-annotator"),
}


def _every_workload_type() -> set[WorkloadType]:
    found = set()
    for info in pkgutil.walk_packages(components.specs.__path__, "components.specs."):
        module = importlib.import_module(info.name)
        found |= {v for v in vars(module).values() if isinstance(v, WorkloadType)}
    return found


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


def test_every_workload_keeps_its_type_token_and_key() -> None:
    assert {t: (t.token, t.key) for t in TOKENS} == TOKENS
    assert _every_workload_type() == set(TOKENS)


@pytest.mark.parametrize("kind", list(TOKENS), ids=lambda t: t.key)
def test_a_workload_declares_its_manifests_and_names_them(kind: WorkloadType) -> None:
    asyncio.set_event_loop(asyncio.new_event_loop())
    settings.ROOT.set(None)
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, project="llmd", stack="t", preview=False)
    made: list[WorkloadComponent] = []
    manifests = [_config_map("a"), _config_map("b")]

    def program() -> None:
        made.append(WorkloadComponent("w", Workload(kind, manifests, outputs={"workloadName": "b"})))

    pulumi.runtime.test(program)()  # type: ignore[no-untyped-call]
    [component] = made
    assert component.objects == ["ConfigMap/a", "ConfigMap/b"]
    assert (TOKENS[kind][0], "w") in mocks.registered
    assert [n for t, n in mocks.registered if t == "kubernetes:core/v1:ConfigMap"] == ["w-a", "w-b"]


def test_a_second_role_gets_its_own_key() -> None:
    decode = Workload(MODEL_SERVER, [])
    prefill = Workload(MODEL_SERVER, [], key_suffix="prefill")
    assert list(ordered([prefill, decode])) == ["model-server-prefill", "model-server"]


def test_the_map_refuses_a_need_not_declared_before_and_a_key_twice() -> None:
    fetch = Workload(model_cache.WORKLOAD, [], needs=(storage.WORKLOAD.key,))
    with pytest.raises(ValueError, match="model-cache needs \\['storage'\\]"):
        ordered([fetch])
    assert list(ordered([Workload(storage.WORKLOAD, []), fetch])) == ["storage", "model-cache"]
    with pytest.raises(ValueError, match="two workloads named storage"):
        ordered([Workload(storage.WORKLOAD, []), Workload(storage.WORKLOAD, [])])
