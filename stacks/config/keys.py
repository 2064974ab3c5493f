"""Every stack config key with its type, default and description: `python -m stacks keys`, and the same as the
Markdown page docs/configuration.md (`python -m stacks docs`; a test fails on an undocumented key or a stale page)."""

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
    type: str = "string"


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


_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string", ByteSize: "size"}


def type_name(annotation: Any) -> str:
    """A field's type as a reader writes it: `size` (`300GiB`), `'cpu' | 'fs'`, `map of string`, `section`."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return type_name(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in typing.get_args(annotation) if a is not type(None))
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin is dict:
        return f"map of {type_name(typing.get_args(annotation)[1])}"
    if origin is list:
        return f"list of {type_name(typing.get_args(annotation)[0])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    if isinstance(annotation, type):
        return _SCALARS.get(annotation, annotation.__name__)
    return str(annotation)


def config_keys(model: type[BaseModel] = StackConfig, prefix: str = "") -> list[Key]:
    out = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        description = " ".join((field.description or "").split())
        out.append(Key(path, _default(field), description, type_name(field.annotation)))
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
                spec["type"],
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
    "string (secret)",
)


def _name(key: Key) -> str:
    """Pulumi config keys are `llmd:`-namespaced; `description` is a preset's own line, not one of them."""
    return key.path if key.path == "description" else f"{CONFIG_NAMESPACE}:{key.path}"


def keys_text() -> str:
    """Each key on a line with its default, its description indented below."""
    keys = [*pulumi_only_keys(), *config_keys()]
    return "".join(f"{_name(k)} (default: {k.default})\n    {k.description}\n" for k in keys)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def keys_markdown() -> str:
    """docs/configuration.md: what `keys_text` prints, as tables, one per top-level section."""
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `./run docs` from the config model (stacks/config/); tests/test_docs.py fails when it is"
        " stale. Do not edit by hand. -->",
        "",
        "Every key of a stack's `llmd:` Pulumi config, nested ones included: its type, its default and what it does;"
        " `./run keys` prints the same. A stack is a preset (`stacks/presets/NAME.yaml`), then its"
        " `Pulumi.<stack>.yaml` config, then (offline) `--set path=value`. Set a nested key with"
        " `pulumi config set --path llmd:cache.tier.cpu 200GiB`.",
        "",
        "Defaults: `unset` and `required` mean no fixed value; the description says where an unset key's value comes"
        " from (the seed's combination, the catalog, the node pool, the cluster stack). `(section)` is a group of the"
        " keys below it; `<pool>` stands for a node pool's name and `[i]` for a list item. Sizes are written `300GiB`"
        " (`Gi`, `GB`, ... accepted).",
        "",
    ]
    groups: dict[str, list[Key]] = {"Pulumi project keys": pulumi_only_keys()}
    keys = config_keys()
    parents = {k.path.split(".", 1)[0] for k in keys if "." in k.path}
    for key in keys:
        top = key.path.split(".", 1)[0]
        groups.setdefault(top if top in parents else "Top-level keys", []).append(key)
    for title, keys in groups.items():
        heading = f"`{_name(keys[0])}`" if title == keys[0].path else title
        lines += [f"## {heading}", "", "| key | type | default | description |", "|---|---|---|---|"]
        lines += [f"| `{_name(k)}` | {_cell(k.type)} | `{_cell(k.default)}` | {_cell(k.description)} |" for k in keys]
        lines.append("")
    return "\n".join(lines)
