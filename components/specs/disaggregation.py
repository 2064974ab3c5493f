"""P/D disaggregation as the specs read it: the two pools' shapes and the transport between them (a record the
config's `cache.disaggregation` resolves to; `Choice.disaggregation`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from components.catalog.accelerators import AcceleratorProfile
from components.catalog.kv_transport import KvTransport

PdRole = Literal["prefill", "decode"]
PD_ROLES: tuple[PdRole, ...] = ("prefill", "decode")


@dataclass(frozen=True)
class PoolShape:
    """One role's pool: its pods, each running `data_parallelism` engines of `tensor_parallelism` devices."""

    replicas: int
    tensor_parallelism: int
    data_parallelism: int  # engines (data-parallel ranks) in one pod, each with its own connector instances
    accelerator: AcceleratorProfile

    @property
    def devices_per_pod(self) -> int:
        return self.tensor_parallelism * self.data_parallelism

    @property
    def engines(self) -> int:
        return self.replicas * self.data_parallelism

    @property
    def devices(self) -> int:
        return self.replicas * self.devices_per_pod


@dataclass(frozen=True)
class Disaggregation:
    """Prefill and decode apart: the prefill pool holds the CPU tier behind a MultiConnector (the handoff and the
    OffloadingConnector), the decode pool the handoff alone; one block size and one hash seed for all
    (components/catalog/kv_transport.py `PD_BLOCK_TOKENS`, `PD_HASH_SEED`)."""

    prefill: PoolShape
    decode: PoolShape
    transport: KvTransport

    def pool(self, role: str) -> PoolShape:
        return self.prefill if role == "prefill" else self.decode
