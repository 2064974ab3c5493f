"""Reading a stack file or a preset: YAML as Pulumi reads it, each problem one line naming file, line and column.

Pulumi (go-yaml v3) rejects a mapping that defines a key twice, where PyYAML keeps the last; this reader
rejects it too. Aliases are shared objects in PyYAML, but everything after the load (merging, validation,
JSON) expands them: a few lines of nested aliases would expand to billions of nodes. The expanded size is
bounded before anything else reads the data.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

from stacks.config import files
from stacks.config.errors import HIDDEN, ConfigError

# Far above any stack (the largest preset is a few hundred nodes), far below what would take a second.
MAX_NODES = 100_000
MAX_BYTES = files.MAX_BYTES


class _Loader(yaml.SafeLoader):
    """SafeLoader with Pulumi's (go-yaml v3, YAML 1.2) reading of numbers: `1:30` is a string, not 90."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: the constructor below reports it
                break
            if duplicate:
                first = seen[key]
                raise ConstructorError(
                    None,
                    None,
                    f"mapping key {key!r} already defined at line {first.line + 1}, column {first.column + 1}",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


# YAML 1.1's base-60 numbers (`1:30` = 90, `1:30.5` = 90.5) are strings in YAML 1.2 and to Pulumi: SafeLoader's
# int and float resolvers without that one alternative each (PyYAML's resolver.py otherwise).
_NUMBERS = {
    "tag:yaml.org,2002:int": re.compile(
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"
    ),
    "tag:yaml.org,2002:float": re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
}
_Loader.yaml_implicit_resolvers = {
    first: [(tag, _NUMBERS.get(tag, regexp)) for tag, regexp in resolvers]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _expanded_nodes(value: Any, budget: int) -> int:
    """Nodes of `value` with every alias expanded, counted up to `budget` (then it stops)."""
    count, stack = 0, [value]
    while stack and count <= budget:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def load(path: Path, shown: str | None = None, within: Path | None = None) -> Any:
    """The YAML document of `path`, a regular file inside `within` (default: its directory) once its links are
    followed; a malformed one is a ConfigError naming `shown` (default: the file name), the line and the column.
    The file's text is never shown (it may hold a secret)."""
    where = shown or path.name
    try:
        raw = files.read_bytes(path, within or path.parent, MAX_BYTES)
    except files.UnreadableError as error:
        raise ConfigError(where, HIDDEN, f"cannot read the file: {error}", hidden=True) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(where, HIDDEN, f"not UTF-8 text (byte {error.start})", hidden=True) from None
    return parse(text, where)


def parse(text: str, where: str) -> Any:
    """The YAML document in `text`, read as `load` reads a file."""
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        problem = " ".join(p for p in (error.context, error.problem) if p) or "malformed YAML"
        raise ConfigError(at, HIDDEN, f"malformed YAML: {problem}", hidden=True) from None
    except yaml.YAMLError as error:
        raise ConfigError(where, HIDDEN, f"malformed YAML: {error}", hidden=True) from None
    except RecursionError:
        raise ConfigError(where, HIDDEN, f"nested deeper than {files.MAX_DEPTH} levels", hidden=True) from None
    check_expansion(data, where)
    return data


def parse_value(text: str) -> Any:
    """A `--set` value: a YAML scalar or flow value, else the text itself (`--set a=b:c` means the string)."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return text
    except RecursionError:
        raise ConfigError("--set", _short(text), f"nested deeper than {files.MAX_DEPTH} levels") from None


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def check_expansion(data: Any, where: str, shown: Any = HIDDEN) -> None:
    """Bounded before anything recursive (merging, validation, JSON) reads it: values, and their nesting."""
    shown = _short(shown) if isinstance(shown, str) else shown
    if _expanded_nodes(data, MAX_NODES) > MAX_NODES:
        raise ConfigError(
            where,
            shown,
            f"its aliases expand to more than {MAX_NODES} values; write the values out",
            hidden=shown is HIDDEN,
        )
    if files.nesting_depth(data) > files.MAX_DEPTH:
        raise ConfigError(where, shown, f"nested deeper than {files.MAX_DEPTH} levels", hidden=shown is HIDDEN)
