"""The component's inputs, generated from the stack config model: one source of truth for every key.

Pulumi infers a component's schema from its Args' annotations, and refuses unions, `Literal`s, tuples and bare
`dict`s (pulumi/provider/experimental/analyzer.py). So each section of `StackConfig` becomes a `TypedDict` (every
key optional, its docstring the field's description), each `Literal` an `Enum` of its values, a size a string in
the units the config takes, and a field that takes a number or a word (`cache.replicas: 3 | auto`) `Any`. The
keys a created cluster needs are left out: the package serves a model on a cluster that exists (its own, or a
cluster stack's). `./run golden` rewrites `stacks/package/args.py` from this; a test fails when they differ.
"""

from __future__ import annotations

import json
import keyword
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from components.catalog.accelerators import ACCELERATORS
from components.units import ByteSize
from stacks.config import StackConfig
from stacks.config.loading import load_preset, preset_names
from stacks.config.provider_kinds import PROVIDER_KINDS
from stacks.deploy.compose import CLOUD_SIDES

# What the generated module says of itself.
HEADER = '''"""ServingStack's inputs, generated from the stack config model (stacks/config/) by
stacks/package/args_codegen.py: do not edit, run `./run golden`. tests/test_package.py fails when this file differs
from a fresh generation."""

# No `from __future__ import annotations`: Pulumi's schema inference reads these annotations at run time.
# ruff: noqa: E501
'''
# Keys of StackConfig the package does not take: a created cluster's settings (the package serves on a cluster
# that exists) and what the component decides itself (its layer follows its cluster's provider).
LEFT_OUT = frozenset({"layer", "description", "cluster.gke", "cluster.eks"})
ARGS_SUFFIX = "Args"


def served_providers() -> tuple[str, ...]:
    """The cluster providers the package deploys on: every one but those that create a cloud cluster."""
    return tuple(key for key in PROVIDER_KINDS if key not in CLOUD_SIDES)


def package_presets() -> tuple[str, ...]:
    """The presets a ServingStack may start from: those on a provider it serves (the default one is `existing`)."""
    served = served_providers()
    return tuple(name for name in preset_names() if load_preset(name).cluster.provider in served)


# The allowed values of a field, by dotted key: where the package narrows the model's Literal, or where the model
# takes a string its registry checks (the accelerator profiles).
ENUMERATED: dict[str, typing.Callable[[], tuple[str, ...]]] = {
    "cluster.provider": served_providers,
    "cache.accelerator": lambda: tuple(ACCELERATORS),
}


@dataclass
class _Module:
    """The generated source, in definition order: each class before its first use."""

    blocks: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)

    def add(self, name: str, text: str) -> str:
        if name in self.names:
            raise ValueError(f"two generated types named {name}: rename one of the config's models or fields")
        self.names.add(name)
        self.blocks.append(text)
        return name


def _stem(model: type[BaseModel]) -> str:
    return re.sub(r"(Config|Settings)$", "", model.__name__)


def _pascal(key: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-.]", key) if part)


def _member(value: object) -> str:
    name = re.sub(r"\W", "_", str(value)).upper()
    name = f"V{name}" if not name[:1].isalpha() else name
    return f"{name}_" if keyword.iskeyword(name) else name


def _doc(text: str | None, indent: str) -> str:
    body = " ".join((text or "").split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'{indent}"""{body}"""\n' if body else ""


def _strip(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without `Annotated` and `None`, whether it allowed None)."""
    optional = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            optional = optional or len(members) < len(typing.get_args(annotation))
            if len(members) != 1:
                return typing.Union[tuple(members)], optional  # noqa: UP007 (a union rebuilt from its parts)
            annotation = members[0]
        else:
            return annotation, optional


def _is_text(annotation: Any) -> bool:
    """A string, a size, or a Literal of strings: what YAML writes as text."""
    annotation = _strip(annotation)[0]
    if annotation in (str, ByteSize):
        return True
    return typing.get_origin(annotation) is typing.Literal and all(
        isinstance(v, str) for v in typing.get_args(annotation)
    )


class Generator:
    def __init__(self) -> None:
        self.module = _Module()
        self.records: dict[type[BaseModel], str] = {}  # a model used twice (router.*_resources) is one type

    def type_of(self, annotation: Any, key: str, owner: type[BaseModel], name: str, description: str | None) -> str:
        annotation, _ = _strip(annotation)
        origin = typing.get_origin(annotation)
        if key in ENUMERATED:
            return self.enum(f"{_stem(owner)}{_pascal(name)}", ENUMERATED[key](), description)
        if annotation in (bool, int, float, str):
            return str(annotation.__name__)
        if annotation is ByteSize:
            return "str"
        if origin is typing.Literal:
            return self.enum(f"{_stem(owner)}{_pascal(name)}", typing.get_args(annotation), description)
        if origin in (typing.Union, types.UnionType):
            members = typing.get_args(annotation)
            return "str" if all(_is_text(m) for m in members) else "Any"  # e.g. a size or auto; 3 or auto
        if origin is dict:
            value = typing.get_args(annotation)[1]
            return f"dict[str, {self.type_of(value, f'{key}.<key>', owner, name, description)}]"
        if origin is list:
            item = typing.get_args(annotation)[0]
            return f"list[{self.type_of(item, f'{key}[i]', owner, name, description)}]"
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self.record(annotation, key, description)
        raise TypeError(f"{key}: no package type for {annotation!r}; teach args_codegen.py")

    def enum(self, name: str, values: tuple[object, ...], description: str | None) -> str:
        lines = [f"class {name}(Enum):\n", _doc(description, "    ") + "\n" if description else ""]
        lines += [f"    {_member(v)} = {json.dumps(v)}\n" for v in values]
        return self.module.add(name, "".join(lines))

    @staticmethod
    def key(prefix: str, name: str) -> str:
        return f"{prefix}.{name}" if prefix else name

    def record(self, model: type[BaseModel], prefix: str, description: str | None) -> str:
        if model in self.records:
            return self.records[model]
        fields = [(name, info) for name, info in model.model_fields.items() if self.key(prefix, name) not in LEFT_OUT]
        body = [
            f"    {name}: {self.type_of(info.annotation, self.key(prefix, name), model, name, info.description)}\n"
            + _doc(info.description, "    ")
            for name, info in fields
        ]
        name = self.records[model] = f"{_stem(model)}{ARGS_SUFFIX}"
        doc = _doc(model.__doc__ if model.__doc__ and model.__doc__ != BaseModel.__doc__ else description, "    ")
        doc += "\n" if doc else ""
        return self.module.add(name, f"class {name}(TypedDict, total=False):\n{doc}{''.join(body)}")


def _serving_stack_args(gen: Generator) -> str:
    """The component's own Args: the preset, the HF token, then StackConfig's sections."""
    presets = gen.enum("Preset", package_presets(), "the preset the stack starts from (stacks/presets/)")
    sections = [(name, info) for name, info in StackConfig.model_fields.items() if name not in LEFT_OUT]
    lines = [
        "class ServingStackArgs(TypedDict, total=False):\n",
        _doc(
            "A model served with its tiered prefix cache on a cluster that exists: the keys of a stack's config "
            "(`./run keys`), in camelCase.",
            "    ",
        )
        + "\n",
        "    hf_token: Required[pulumi.Input[str]]\n",
        _doc("Hugging Face token, kept a secret and stored in the llm-d-hf-token Secret", "    "),
        f"    preset: {presets}\n",
        _doc(
            "the preset the stack starts from (a file in stacks/presets/); its keys are merged under the ones set "
            "here; default: the seed's default deployment",
            "    ",
        ),
    ]
    for name, info in sections:
        lines.append(f"    {name}: {gen.type_of(info.annotation, name, StackConfig, name, info.description)}\n")
        lines.append(_doc(info.description, "    "))
    return gen.module.add("ServingStackArgs", "".join(lines))


def generate() -> str:
    """The source of stacks/package/args.py."""
    gen = Generator()
    _serving_stack_args(gen)
    imports = "from enum import Enum\nfrom typing import Any, Required, TypedDict\n\nimport pulumi\n"
    return HEADER + "\n" + imports + "".join(f"\n\n{block}" for block in gen.module.blocks)
