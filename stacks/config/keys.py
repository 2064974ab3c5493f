"""Every stack config key with its default and description: `python -m stacks keys` (and a test that
fails on an undocumented one)."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from components.units import ByteSize
from stacks.config import StackConfig
from stacks.config.cluster_facts import ClusterOutputs
from stacks.config.loading import CONFIG_NAMESPACE, PROJECT_DIR


@dataclass(frozen=True)
class Key:
    path: str  # dotted, `<pool>` for a node pool's key and `[i]` for a list item
    default: str
    description: str


def _models(annotation: Any) -> Iterator[tuple[str, type[BaseModel]]]:
    """The models an annotation holds: itself (""), a mapping's values (".<pool>") or a list's items ("[i]")."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from _models(arg)
    elif isinstance(annotation, type) and issubclass(annotation, ClusterOutputs):
        return  # filled in from the cluster stack, never set: listed as one key
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield "", annotation
    elif typing.get_origin(annotation) is dict:
        yield from ((".<pool>", m) for _, m in _models(typing.get_args(annotation)[1]))
    elif typing.get_origin(annotation) is list:
        yield from (("[i]", m) for _, m in _models(typing.get_args(annotation)[0]))


def _default(field: Any) -> str:
    if field.default is PydanticUndefined:
        return "{}" if field.default_factory is dict else "[]" if field.default_factory is list else "required"
    value = field.default
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, ByteSize):
        return value.human().replace(" ", "")
    return "unset" if value is None else repr(value) if isinstance(value, str) else str(value).lower()


def config_keys(model: type[BaseModel] = StackConfig, prefix: str = "") -> list[Key]:
    out = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        out.append(Key(path, _default(field), " ".join((field.description or "").split())))
        for suffix, inner in _models(field.annotation):
            out += config_keys(inner, f"{path}{suffix}.")
    return out


def pulumi_only_keys() -> list[Key]:
    """The keys Pulumi.yaml declares that are not StackConfig fields (preset, hfToken), with its descriptions."""
    declared = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text(encoding="utf-8"))["config"]
    return [
        *(
            Key(
                name,
                repr(spec.get("default")) if "default" in spec else "required",
                " ".join(spec["description"].split()),
            )
            for name, spec in declared.items()
        ),
        HF_TOKEN,
    ]


# Undeclared in Pulumi.yaml: the engine would require a declared key of a cluster stack too (program.py checks it).
HF_TOKEN = Key(
    "hfToken",
    "required",
    "Hugging Face token, stored in the llm-d-hf-token Secret (set with `pulumi config set --secret llmd:hfToken`);"
    " required by a stack serving a model, unused by a cluster stack (layer cluster)",
)


def _name(key: Key) -> str:
    """Pulumi config keys are `llmd:`-namespaced; `description` is a preset's own line, not one of them."""
    return key.path if key.path == "description" else f"{CONFIG_NAMESPACE}:{key.path}"


def keys_text() -> str:
    """Each key on a line with its default, its description indented below."""
    keys = [*pulumi_only_keys(), *config_keys()]
    return "".join(f"{_name(k)} (default: {k.default})\n    {k.description}\n" for k in keys)
