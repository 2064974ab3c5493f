"""The two model-server roles of `cache.disaggregation`: each pool's spec from the stack's one (its accelerator,
counts, engines, node pool, image and sizes); the prefill pods hold the CPU tier per engine, the decode pods none."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from components.catalog.kv_transport import PD_BLOCK_TOKENS
from components.specs.connectors.native import size_pd_pod
from components.specs.disaggregation import PD_ROLES, Disaggregation
from components.specs.servers import ServerSpec
from components.specs.servers.scheduling import Scheduling
from components.units import ByteSize
from stacks.planning.gpu_product_affinity import with_product
from stacks.planning.resolution import Resolved
from stacks.planning.tier_identity import tier_identity


def pd_servers(stack: Resolved, base: ServerSpec, scheduling: Callable[[str | None], Scheduling]) -> list[ServerSpec]:
    """Prefill then decode. `base`: the stack's model server at the stack's tier (its CPU tier per pod is the tier
    of one prefill engine); `scheduling`: a node pool's placement (None: the stack's)."""
    pd = stack.choice.disaggregation
    assert pd is not None, "a disaggregated stack resolves its pools"
    per_engine = base.sizing.cpu_tier_per_pod
    pools = stack.config.cache.disaggregation
    assert pools is not None
    out = []
    for role in PD_ROLES:  # each pool's own engines; a persistent tier's identity from each pool's shape
        pool, configured = pd.pool(role), getattr(pools, role)
        sizing = size_pd_pod(
            base.model,
            pool.accelerator,
            pool.tensor_parallelism,
            pool.data_parallelism,
            per_engine if role == "prefill" else ByteSize(0),
            PD_BLOCK_TOKENS,
        )
        out.append(
            dataclasses.replace(
                base,
                role=role,
                accelerator=pool.accelerator,
                replicas=pool.replicas,
                tensor_parallelism=pool.tensor_parallelism,
                devices=pool.devices_per_pod,
                data_parallelism=pool.data_parallelism,
                image=stack.config.cache.image or pool.accelerator.vllm_image,
                sizing=sizing,
                cpu_tier_bytes=sizing.cpu_tier_per_pod.bytes,
                scheduling=with_product(
                    stack.config, scheduling(configured.node_pool or stack.config.cache.node_pool), pool.accelerator.key
                ),
            )
        )
    if base.tier_identity is None:
        return out
    return [dataclasses.replace(s, tier_identity=tier_identity(stack.config, s)) for s in out]


def with_pool_counts(stack: Resolved, prefill: int, decode: int) -> Resolved:
    """The stack with its pools at the counts the P/D plan took (`cache.disaggregation.*.replicas: auto`)."""
    pd = stack.choice.disaggregation
    assert pd is not None
    pools = dataclasses.replace(
        pd,
        prefill=dataclasses.replace(pd.prefill, replicas=prefill),
        decode=dataclasses.replace(pd.decode, replicas=decode),
    )
    return dataclasses.replace(stack, choice=dataclasses.replace(stack.choice, disaggregation=pools))


def engine_shape(spec: ServerSpec) -> ServerSpec:
    """One engine of a pod (its tensor-parallel devices): what the HBM budget is checked for."""
    return dataclasses.replace(spec, devices=spec.tensor_parallelism, data_parallelism=1)


def prefill_of(servers: list[ServerSpec], pd: Disaggregation | None) -> ServerSpec:
    """The role whose CPU tier the router indexes: the prefill pool under P/D, else the one server."""
    return servers[0] if pd is not None else servers[-1]
