"""A ServingStack's inputs as the stack config the Python program validates, and its errors in the consumer's terms.

The component provider hands the inputs over with Python's names (`tensor_parallelism`), its enums as members and
every number as a float (the engine's wire type); this turns them into the sections `stacks.config.loading.build`
takes, so every check, default and error line is the stack config's own. An error then names the property as the
consumer wrote it (`cache.tensorParallelism`), not the config key.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any

import pulumi
from pulumi.provider.experimental.util import camel_case as camel  # the schema's name of a Python name
from pydantic import BaseModel

from stacks.config import StackConfig
from stacks.config.errors import ConfigError, unwrap_optional
from stacks.config.loading import build
from stacks.package.args_codegen import LEFT_OUT, served_providers
from stacks.planning.plan import StackPlan, plan

# The wire marker of a special value (a secret, an asset, a resource reference) in Pulumi's property protocol
# (pulumi/sdk/go/common/resource/sig: SigKey): a nested secret reaches a component as a map holding it.
SPECIAL_VALUE_KEY = "4dabf18193072939515e22adb298388d"
COMPONENT = "ServingStack"
SOURCE = f"from the {COMPONENT}'s properties"
# The inputs that are not stack config sections.
TOKEN, PRESET = "hf_token", "preset"


class InputError(Exception):
    """One line: the component's property (camelCase, as the consumer wrote it), its value, what is allowed."""

    def __init__(self, path: str, line: str, reason: str) -> None:
        super().__init__(line)
        self.path = path  # the property, e.g. cache.tensorParallelism
        self.reason = reason  # what is allowed, and where the value came from: the engine names property and value


def plain(value: Any) -> Any:
    """The value as the stack config takes it: enum members by value, whole floats as integers (the engine sends
    every number as a float; a float field takes an integer as well), containers walked."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def property_path(field: str) -> str:
    """A config key (`cache.tensor_parallelism`, `node_pools.h100.host_memory`) as the component's property path:
    the model's field names in camelCase, dict keys and list indexes as written."""
    current: Any = StackConfig
    out: list[str] = []
    for part in field.replace("[", ".[").split("."):
        if typing.get_origin(current) in (dict, list):
            out.append(part)
            current = typing.get_args(current)[-1]
        elif isinstance(current, type) and issubclass(current, BaseModel) and part in current.model_fields:
            out.append(camel(part))
            current = unwrap_optional(current.model_fields[part].annotation)
        else:
            out.append(camel(part) if "_" in part and not part.startswith("[") else part)
            current = None
    return ".".join(out).replace(".[", "[")


def error_line(error: ConfigError, name: str) -> str:
    """The config's one line, with the property in place of the key and where it came from."""
    text = str(error).removeprefix("invalid stack config: ")
    key = error.field
    if text.startswith(key):
        text = property_path(key) + text[len(key) :]
    return f"invalid {COMPONENT} {name!r} input: {text} ({SOURCE})"


def _unresolved(value: Any, path: str) -> str | None:
    """The first property under `value` the engine sent as an output (a secret, or another resource's output:
    its value is not read here, so never printed); None when every value is plain."""
    if isinstance(value, pulumi.Output) or (isinstance(value, Mapping) and SPECIAL_VALUE_KEY in value):
        return path
    if isinstance(value, Mapping):
        return next((p for k, v in value.items() if (p := _unresolved(v, f"{path}.{k}"))), None)
    if isinstance(value, list | tuple):
        return next((p for i, v in enumerate(value) if (p := _unresolved(v, f"{path}[{i}]"))), None)
    return None


def sections_of(args: Mapping[str, Any], name: str) -> tuple[str | None, dict[str, Any]]:
    """(the preset, the stack config sections) of the inputs; refused when a key the package leaves out is set, or
    when a value is not plain (the plan sizes every object from the values before anything is created)."""
    for key, value in args.items():
        found = _unresolved(value, key) if key != TOKEN else None
        if found is not None:
            path = property_path(found)
            reason = (
                "must be a plain value (a literal or a plain config value): a secret or another resource's output"
                f" is not known when the stack is planned; only hfToken takes a secret ({SOURCE})"
            )
            raise InputError(path, f"invalid {COMPONENT} {name!r} input: {path} = (not shown): {reason}", reason)
    preset = args.get(PRESET)
    sections = {key: plain(value) for key, value in args.items() if key not in (TOKEN, PRESET) and value is not None}
    cluster = sections.get("cluster") or {}
    provider = cluster.get("provider", "existing")
    if provider not in served_providers():
        reason = (
            f"allowed: {', '.join(served_providers())} (a cluster the component serves on; create one with the "
            f"Python program's cluster stack, `layer: cluster`) ({SOURCE})"
        )
        line = f"invalid {COMPONENT} {name!r} input: cluster.provider = {provider!r}: {reason}"
        raise InputError("cluster.provider", line, reason)
    left_out = sorted(key for key in LEFT_OUT if _is_set(sections, key))
    if left_out:
        path = property_path(left_out[0])
        reason = f"not an input of {COMPONENT} ({SOURCE})"
        raise InputError(path, f"invalid {COMPONENT} {name!r} input: {path}: {reason}", reason)
    return (plain(preset) if preset is not None else None), sections


def _is_set(sections: Mapping[str, Any], dotted: str) -> bool:
    node: Any = sections
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def planned(args: Mapping[str, Any], name: str, read_cluster: typing.Callable[[str], Any]) -> StackPlan:
    """The plan of the inputs: validated, checked and planned as the program plans its own stack config (raises
    `InputError` with the config's one line in the consumer's terms)."""
    preset, sections = sections_of(args, name)
    try:
        return plan(build(preset, sections, read_cluster=read_cluster))
    except ConfigError as error:
        reason = f"{error.allowed} ({SOURCE})"
        raise InputError(property_path(error.field), error_line(error, name), reason) from None
