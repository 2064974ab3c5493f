"""`cache.disaggregation`: prefill and decode apart (P/D), each pool with its own shape; the prefill pool holds the
CPU tier (`cache.tier`), the decode pool only the handoff."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from components.catalog.accelerators import ACCELERATORS
from components.catalog.kv_transport import MAX_LOCAL_RANKS
from stacks.config.fields import Section, key_of

MAX_POOL_REPLICAS = 256  # pods one pool runs (as cache.replicas)


class PoolConfig(Section):
    """One role's pool: how many pods, and what each runs."""

    replicas: int | Literal["auto"] = 1
    """pods of this role; auto: the fewest that meet `workload.slo` by the P/D replay (prefill: its TTFT target,
    decode: its time-per-output-token target); default 1"""
    tensor_parallelism: int | None = Field(default=None, ge=1, le=64)
    """devices one engine shards the model over (--tensor-parallel-size); default: `cache.tensor_parallelism`, else
    the combination's"""
    data_parallelism: int = Field(default=1, ge=1, le=MAX_LOCAL_RANKS)
    """engines in one pod (--data-parallel-size), each with its own connectors: a prefill pod's CPU tier is
    `cache.tier.cpu` x this; default 1"""
    accelerator: Annotated[str | None, key_of(ACCELERATORS)] = Field(
        default=None,
        description=f"this pool's accelerator where it differs from `cache.accelerator` ({', '.join(ACCELERATORS)});"
        " default: `cache.accelerator`",
    )
    node_pool: str | None = Field(
        default=None, description="key of `node_pools` this pool runs on; default: `cache.node_pool`"
    )

    @field_validator("replicas")
    @classmethod
    def _count(cls, value: int | str) -> int | str:
        if isinstance(value, int) and not 1 <= value <= MAX_POOL_REPLICAS:
            raise ValueError(f"must be from 1 to {MAX_POOL_REPLICAS}, or auto")
        return value


class DisaggregationConfig(Section):
    """Prefill and decode on separate pods: the prefill pods compute prompts into their HBM and CPU tier and hand
    the KV to a decode pod over the transport; the router picks one of each per request."""

    transport: Literal["nixl"] = "nixl"
    """the prefill -> decode KV handoff: nixl (vLLM's NixlConnector); default nixl, the llm-d P/D guide's"""
    prefill: PoolConfig = PoolConfig()
    """the prefill pool: it holds the CPU tier (`cache.tier.cpu` per engine)"""
    decode: PoolConfig = PoolConfig()
    """the decode pool: the handoff only, behind the router's P/D sidecar"""
