"""The filesystem tier's claim and its backend; the model cache's volume."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from components.catalog import labels, versions
from components.catalog.storage_backends import AWS_EFS, BackendKey, EfsModeKey, described
from components.units import ByteSize, GiB, MiB
from stacks.config.fields import (
    MAX_STORAGE,
    MIN_BANDWIDTH,
    ImageReference,
    OwnNamespace,
    Section,
    StorageClassName,
    size_between,
)


class LustreSettings(Section):
    """GCP Managed Lustre: capacity is `storage.size`; throughput per TiB sets its minimum and step."""

    per_unit_storage_throughput: Literal[125, 250, 500, 1000] = 1000
    """MB/s per TiB: 125, 250, 500 or 1000; sets the minimum capacity and its step; default 1000, the seed's"""
    filesystem: str = Field(default="kvcache", pattern=r"^[A-Za-z][A-Za-z0-9]{0,7}$")
    """Lustre file system name, 1-8 letters or digits; default kvcache"""


class EfsSettings(Section):
    """AWS EFS: its throughput mode (its limits and how it is billed: the summary's Cost section shows both)."""

    throughput_mode: EfsModeKey = Field(
        default=AWS_EFS.default_mode.key,
        description="; ".join(m.words for m in AWS_EFS.modes.values()) + f"; default {AWS_EFS.default_mode.key}",
    )
    provisioned_mibps: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="provisioned: MiB/s the file system is provisioned with; unset: derived from the workload's"
        " replayed rates (what the writes and a third of the reads need, up to the region's cap)",
    )


class EvictorSettings(Section):
    """The filesystem tier's evictor: the connectors never delete from the shared claim, so a Deployment beside
    it deletes the least recently used files above the high watermark, down to the low one."""

    mode: Literal["auto", "off"] = Field(
        default="auto",
        description="auto: an evictor beside the filesystem tier's claim; off: none (a Lustre tier fills and its"
        " stores fail, an EFS tier grows without bound; the summary says when and how fast)",
    )
    high_watermark: float | None = Field(
        default=None,
        gt=0,
        le=100,
        description="percent of the claim above which it deletes; unset: derived from the claim's size, the store"
        " rate and the scan rate (the summary shows the formula)",
    )
    low_watermark: float | None = Field(
        default=None,
        gt=0,
        lt=100,
        validate_default=True,
        description="percent of the claim it deletes down to; below high_watermark by more than one scan's stores;"
        " unset: derived",
    )
    scan_rate: int = Field(
        default=2000,
        ge=10,
        le=10_000_000,
        description="files per second the evictor stats and deletes on the backend (modeled; its metric"
        " tier_evictor_scan_seconds measures it)",
    )
    budget: Annotated[ByteSize | None, size_between(ByteSize(GiB), MAX_STORAGE)] = Field(
        default=None,
        description="aws-efs: the bytes the tier's directory may hold (EFS is elastic, its claim's size nominal);"
        " default 9000 GiB, the guide's claim; other backends: storage.size",
    )
    image: ImageReference = Field(
        default=versions.VERIFICATION_IMAGE, description="the evictor's Python image; its script uses the stdlib"
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML reads a bare `off` as false."""
        return "off" if value is False else value

    @field_validator("low_watermark")
    @classmethod
    def _below_high(cls, value: float | None, info: ValidationInfo) -> float | None:
        high = info.data.get("high_watermark", None)
        if (value is None) != (high is None) and "high_watermark" in info.data:
            raise ValueError("set both watermarks, or neither (derived)")
        if value is not None and high is not None and value >= high:
            raise ValueError(f"must be below high_watermark ({high:g})")
        return value


class StorageConfig(Section):
    """The filesystem tier's ReadWriteMany claim (`llm-d-kv-cache-storage`, mounted at /mnt/files-storage)."""

    backend: BackendKey = Field(default="existing", description=described())
    storage_class: StorageClassName = Field(
        default="", description="existing: the claim's StorageClass; empty: the cluster default"
    )
    size: Annotated[ByteSize, size_between(ByteSize(MiB), MAX_STORAGE)] = Field(
        default=ByteSize(9000 * GiB), description="requested capacity of the claim"
    )
    read_bandwidth: Annotated[ByteSize | None, size_between(MIN_BANDWIDTH, MAX_STORAGE)] = Field(
        default=None,
        description="existing: aggregate read bytes per second of the StorageClass, shared by the pods"
        " (the payoff table's filesystem tier); unset: not derived",
    )
    lustre: LustreSettings = LustreSettings()
    """GCP Managed Lustre settings (storage.backend gcp-lustre)"""
    efs: EfsSettings = EfsSettings()
    """AWS EFS settings (storage.backend aws-efs)"""
    evictor: EvictorSettings = EvictorSettings()
    """the filesystem tier's evictor (capacity management of the shared claim)"""
    claim_namespace: OwnNamespace = labels.DEFAULT_NAMESPACE
    """a cluster stack's Lustre volume: the namespace of the serving stack whose filesystem tier it holds (a
    volume binds one claim); default llm-d-tiered-prefix-cache"""


class ModelCacheConfig(Section):
    """Model weights fetched once per stack by a Job into a ReadWriteMany volume: model servers load them
    from there instead of each downloading from Hugging Face, and keep their compile caches beside them."""

    mode: Literal["auto", "shared", "dedicated", "off"] = Field(
        default="auto",
        description="auto: shared where the stack has the filesystem tier's claim, else off; shared: on that"
        " claim; dedicated: on its own ReadWriteMany claim `llm-d-model-cache`; off: every pod downloads",
    )
    revision: str = Field(
        default="main", pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$", description="the model's branch, tag or commit"
    )
    storage_class: StorageClassName = Field(
        default="", description="dedicated: the claim's StorageClass (ReadWriteMany); empty: the cluster default"
    )
    size: Annotated[ByteSize | None, size_between(ByteSize(MiB), MAX_STORAGE)] = Field(
        default=None, description="dedicated: the claim's size; default: twice the weights (a revision beside another)"
    )
    compile_cache: bool = Field(
        default=True, description="keep vLLM, torch.compile and Triton (GPU) or XLA (TPU) caches on the volume"
    )
    image: ImageReference = Field(
        default=versions.MODEL_FETCH_IMAGE, description="the fetch Job's Python image; its script uses the stdlib"
    )

    @field_validator("revision")
    @classmethod
    def _a_ref_not_a_path(cls, value: str) -> str:
        """The fetch Job writes the revision under the model's directory: no part may climb out of it."""
        if any(part in ("", ".", "..") for part in value.split("/")) or ".." in value or value.endswith(".lock"):
            raise ValueError("must be a branch, tag or commit (git's ref rules: no '..', no empty part)")
        return value

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML reads a bare `off` as false."""
        return "off" if value is False else value
