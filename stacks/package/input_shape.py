"""A ServingStack's properties held to the package's own schema before anything reads them.

The SDK maps the engine's properties onto the Args by walking the schema's properties alone
(`ComponentProvider.map_input_properties`): a property the schema does not name is dropped without a word (a
misspelt `tensorParalelism`, `layer`, `cluster.gke` planned as the defaults), a string where a section goes is
read as an empty section, and a value its integer mapping cannot convert (`inf`, a list) is a Python traceback.
This walks the properties as the engine sent them (camelCase) against the schema first and names the first one
the schema does not take, in the consumer's terms, with what it takes; every text is bounded on the way.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from stacks.config.files import MAX_BYTES
from stacks.package.args_codegen import LEFT_OUT
from stacks.package.inputs import COMPONENT, SOURCE, SPECIAL_VALUE_KEY, property_path

# The longest text a property holds is a path (cluster.kubeconfig, cluster.outputsFile, workload.trace): Linux's
# PATH_MAX, 4096 bytes (limits.h). Longer is refused in a line that shows only its length.
MAX_TEXT_CHARS = 4096
# All the properties together: what a stack file may hold (stacks/config/files.py), the same config as YAML.
MAX_TOTAL_CHARS = MAX_BYTES
SHOWN_CHARS = 60  # of a refused value, in the error line
TYPE_PREFIX = "#/types/"
LEFT_OUT_PATHS = {property_path(key): key for key in LEFT_OUT}
TOKEN_PROPERTY = "hfToken"


@dataclass(frozen=True)
class Refusal:
    """The property (camelCase, as the consumer wrote it) and why it is refused."""

    path: str
    reason: str


class _Walk:
    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.types: Mapping[str, Any] = schema.get("types") or {}
        self.total = 0

    def text(self, value: str, path: str) -> Refusal | None:
        self.total += len(value)
        if len(value) > MAX_TEXT_CHARS:
            most = f"a property holds at most {MAX_TEXT_CHARS:,}"
            return Refusal(path, f"is {len(value):,} characters; {most} ({SOURCE})")
        if self.total > MAX_TOTAL_CHARS:
            return Refusal(
                path, f"the properties pass {MAX_TOTAL_CHARS:,} characters here, what a stack file may hold ({SOURCE})"
            )
        return None

    def record(self, value: Any, properties: Mapping[str, Any], path: str, owner: str) -> Refusal | None:
        """A section: a map of the schema's properties, each checked; a key it does not name is refused."""
        if not isinstance(value, Mapping):
            return _wrong(value, path, f"a map of {owner}'s properties")
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if not isinstance(key, str) or (found := self.text(key, where)) is not None:
                return found or Refusal(where, f"a property's name is text ({SOURCE})")
            if key not in properties:
                return _unknown(where, key, properties, owner)
            if (found := self.value(item, properties[key], where)) is not None:
                return found
        return None

    def value(self, value: Any, prop: Mapping[str, Any], path: str) -> Refusal | None:
        """One value against its schema property (a reference, a scalar type, an array or a map)."""
        if value is None or isinstance(value, pulumi.Output) or _special(value):
            return None  # unset; or not known yet: `inputs.sections_of` refuses it, unprinted
        ref = str(prop.get("$ref", ""))
        if ref.startswith(TYPE_PREFIX):
            kind = self.types[ref.removeprefix(TYPE_PREFIX)]
            if "enum" in kind:
                return self.enum(value, [e["value"] for e in kind["enum"]], path)
            return self.record(value, kind.get("properties") or {}, path, _owner(path))
        if ref:  # pulumi.json#/Any: a number or a word (cache.replicas: 3 or auto)
            if isinstance(value, str):
                return self.text(value, path)
            return None if _number(value) else _wrong(value, path, "a number or a word")
        return self.typed(value, prop, path)

    def typed(self, value: Any, prop: Mapping[str, Any], path: str) -> Refusal | None:
        kind = prop.get("type")
        if kind == "string":
            return self.text(value, path) if isinstance(value, str) else _wrong(value, path, "text")
        if kind == "integer":
            whole = _number(value) and float(value).is_integer()
            return None if whole else _wrong(value, path, "a whole number")
        if kind == "number":
            return None if _number(value) else _wrong(value, path, "a finite number")
        if kind == "boolean":
            return None if isinstance(value, bool) else _wrong(value, path, "true or false")
        if kind == "array":
            if not isinstance(value, list | tuple):
                return _wrong(value, path, "a list")
            items = prop.get("items") or {}
            return next((f for i, v in enumerate(value) if (f := self.value(v, items, f"{path}[{i}]"))), None)
        if kind == "object":
            if not isinstance(value, Mapping):
                return _wrong(value, path, "a map")
            entries = prop.get("additionalProperties") or {}
            for key, item in value.items():
                where = f"{path}.{key}"
                found = self.text(key, where) if isinstance(key, str) else Refusal(where, "a key is text")
                if found is not None or (found := self.value(item, entries, where)) is not None:
                    return found
            return None
        return None  # a type the schema inference does not write

    def enum(self, value: Any, allowed: list[Any], path: str) -> Refusal | None:
        if isinstance(value, str) and (found := self.text(value, path)) is not None:
            return found
        plain = getattr(value, "value", value)  # an enum member, as a Python consumer passes it
        if not isinstance(plain, bool) and plain in allowed:
            return None
        return Refusal(path, f"{_shown(value)}: allowed: {', '.join(str(a) for a in allowed)} ({SOURCE})")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _special(value: Any) -> bool:
    return isinstance(value, Mapping) and SPECIAL_VALUE_KEY in value


def _owner(path: str) -> str:
    return f"{COMPONENT}'s {path}" if path else COMPONENT


def _shown(value: Any) -> str:
    """A refused value, short: a long text or structure by its length and start."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text):,} characters)"


def _wrong(value: Any, path: str, takes: str) -> Refusal:
    return Refusal(path, f"{_shown(value)}: must be {takes} ({SOURCE})")


def _unknown(path: str, key: str, properties: Mapping[str, Any], owner: str) -> Refusal:
    if path in LEFT_OUT_PATHS:
        return Refusal(path, f"not an input of {COMPONENT} ({SOURCE})")
    near = difflib.get_close_matches(key, list(properties), n=1)
    hint = f"did you mean {near[0]}? " if near else ""
    known = ", ".join(sorted(properties))
    return Refusal(path, f"not a property of {owner}: {hint}it takes {known} ({SOURCE})")


def _token_refusal(token: Any) -> Refusal | None:
    """The token, never shown: text (or a secret), not empty, bounded."""
    if token is None or isinstance(token, pulumi.Output) or _special(token):
        return None  # missing: the SDK names the required input; a secret: read when the Secret is created
    if not isinstance(token, str):
        return Refusal(TOKEN_PROPERTY, f"(not shown): must be text, a Hugging Face token ({SOURCE})")
    if not token.strip():
        return Refusal(TOKEN_PROPERTY, f"is empty: set it to a Hugging Face token ({SOURCE})")
    if len(token) > MAX_TEXT_CHARS:
        return Refusal(TOKEN_PROPERTY, f"(not shown) is {len(token):,} characters; a token is far shorter ({SOURCE})")
    return None


def refusal(inputs: Mapping[str, Any], schema: Mapping[str, Any]) -> Refusal | None:
    """The first of the component's properties its schema does not take (unknown, of another type, unbounded), in
    the consumer's terms; None when every one fits. The token is checked apart: its text is never shown."""
    resource = schema["resources"][f"{schema['name']}:index:{COMPONENT}"]
    properties = dict(resource.get("inputProperties") or {})
    rest = {k: v for k, v in inputs.items() if k != TOKEN_PROPERTY}
    return _token_refusal(inputs.get(TOKEN_PROPERTY)) or _Walk(schema).record(rest, properties, "", COMPONENT)
