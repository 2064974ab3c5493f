"""Shared field types and bounds of the config sections (every section builds on `Section`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo, field_validator

from components.catalog.machines import SYSTEM_MACHINES
from components.units import ByteSize, MiB, TiB
from stacks.config import formats

# Bounds of sizes no node pool bounds: no node holds more memory (AWS u7in-32tb: 32 TiB), and a
# Kubernetes quantity is an int64 of bytes (8 EiB).
MAX_NODE_MEMORY = ByteSize(32 * TiB)
MAX_STORAGE = ByteSize(1024**4 * 1024**2)  # 1 EiB, well within an int64 quantity
HELM_RELEASE_MAX = 53  # Helm's limit on release names
# Bandwidths are bytes per second: below 1 MiB/s no storage or host link moves data (a bare `1` is a
# unit left out, and reading weights at it would take centuries).
MIN_BANDWIDTH = ByteSize(MiB)


def _is_number(annotation: Any) -> bool:
    return annotation in (int, float) or any(a in (int, float) for a in get_args(annotation))


class Section(BaseModel):
    # Numbers are accepted for strings (`pulumi config set --path` stores `123` as a number), but
    # booleans are never numbers (`replicas: true` is a mistake, not 1).
    model_config = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True, use_attribute_docstrings=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name and _is_number(cls.model_fields[info.field_name].annotation):
            raise ValueError("must be a number, not a boolean")
        return value


def size_between(low: ByteSize, high: ByteSize) -> AfterValidator:
    def check(value: ByteSize | str | None) -> ByteSize | str | None:
        if isinstance(value, ByteSize) and not low <= value <= high:
            raise ValueError(f"must be between {low.human()} and {high.human()}")
        return value

    return AfterValidator(check)


def key_of(registry: Mapping[str, object]) -> AfterValidator:
    """A name that must be one of a catalog registry's keys (None passes: the field is unset)."""

    def check(value: str | None) -> str | None:
        if value is not None and value not in registry:
            raise ValueError(f"allowed: {', '.join(sorted(registry))}")
        return value

    return AfterValidator(check)


def check_with(rule: Callable[[str], str]) -> AfterValidator:
    return AfterValidator(rule)


def system_machine(cloud: str) -> Callable[[str], str]:
    """A machine type of the system pool from the catalog (components/catalog/machines.py SYSTEM_MACHINES)."""

    def check(value: str) -> str:
        machine = SYSTEM_MACHINES.get(value)
        if machine is None or machine.cloud != cloud:
            known = ", ".join(sorted(k for k, m in SYSTEM_MACHINES.items() if m.cloud == cloud))
            raise ValueError(
                f"allowed: {known}; another machine type is added to components/catalog/machines.py SYSTEM_MACHINES"
                " with its vCPUs and memory"
            )
        return value

    return check


DnsLabel = Annotated[str, check_with(formats.dns_label)]
ImageReference = Annotated[str, check_with(formats.image_reference)]
StorageClassName = Annotated[str, check_with(lambda v: v and formats.dns_subdomain(v))]  # empty: the default
Labels = Annotated[dict[str, str], AfterValidator(formats.labels)]
Memory = Annotated[ByteSize, size_between(ByteSize(MiB), MAX_NODE_MEMORY)]
OwnNamespace = Annotated[str, check_with(formats.own_namespace)]  # a namespace a stack creates: not the cluster's
