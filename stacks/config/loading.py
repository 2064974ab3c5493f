"""Build a StackConfig from a preset, then the stack's Pulumi config, then `--set path=value` overrides."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stacks.config import SECTIONS, StackConfig, files, yamlfile
from stacks.config.cluster_facts import ClusterOutputs
from stacks.config.cluster_outputs import (
    check_serving,
    describe,
    read_outputs,
    serving_data,
    storage_section,
)
from stacks.config.cluster_section import ClusterConfig
from stacks.config.connector_choice import connector_of
from stacks.config.cross_checks import check_stack
from stacks.config.errors import HIDDEN, ConfigError, from_validation_error
from stacks.config.model_file import with_model_file
from stacks.config.provider_kinds import PROVIDER_KINDS
from stacks.config.workload_trace import project_trace_path

PRESETS_DIR = Path(__file__).parents[1] / "presets"
PROJECT_DIR = Path(__file__).parents[2]
CONFIG_NAMESPACE = "llmd"
PROJECT_NAME = "llmd"  # Pulumi.yaml `name`: the project a repo-local cluster stack belongs to
# Pulumi config keys that are not StackConfig sections.
PRESET_KEY = "preset"
HF_TOKEN_KEY = "hfToken"
# What an offline render reads in place of a secure stack value (it has no key to decrypt it with).
OFFLINE_SECRET = "offline-render-secret-value"
SECRET_MIN_LENGTH = 4  # shorter secret values (a flag, a count) are not searched for in error text
PULUMI_KEYS: tuple[str, ...] = (PRESET_KEY, HF_TOKEN_KEY, *(s for s in SECTIONS if s != "description"))
# The repo's stack files being loaded, outermost first: a stack named again as a cluster closes a cycle.
_LOADING: list[str] = []


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def read_preset(name: str) -> dict[str, Any]:
    """A preset by name: only the files of stacks/presets/ (never a path: `llmd:preset` is not a file to load)."""
    if name not in preset_names():
        raise ConfigError("preset", name, f"allowed: {', '.join(preset_names())}")
    data = yamlfile.load(PRESETS_DIR / f"{name}.yaml", f"stacks/presets/{name}.yaml") or {}
    if not isinstance(data, dict):
        raise ConfigError("preset", name, "the preset file must hold a mapping")
    return data


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; any other value (lists included) replaces what was there."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_override(text: str) -> tuple[list[str], Any]:
    """`cache.replicas=3` -> (["cache", "replicas"], 3); the value is read as a YAML scalar or flow value."""
    path, sep, raw = text.partition("=")
    if not sep or not path or any(not part for part in path.split(".")):
        raise ConfigError("--set", text, "expected path=value, e.g. cache.replicas=3")
    value = yamlfile.parse_value(raw) if raw else ""
    yamlfile.check_expansion(value, "--set", text)
    return path.split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for text in overrides:
        keys, value = parse_override(text)
        node = out
        for i, key in enumerate(keys[:-1]):
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise ConfigError(".".join(keys[: i + 1]), child, "is a value, not a mapping; cannot set a key in it")
            node = child
        node[keys[-1]] = value
    return out


def pulumi_sections(values: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Split `llmd:`-namespaced Pulumi config into the preset name and StackConfig sections."""
    preset: str | None = None
    sections: dict[str, Any] = {}
    for full_key, value in values.items():
        namespace, _, key = full_key.partition(":")
        if namespace != CONFIG_NAMESPACE:
            continue
        if key not in PULUMI_KEYS:
            raise ConfigError(full_key, value, f"unknown key; allowed: {', '.join(PULUMI_KEYS)}", hidden=True)
        if key == PRESET_KEY:
            preset = str(value)
        elif key != HF_TOKEN_KEY:
            sections[key] = value
    return preset, sections


def build(
    preset: str | None = None,
    pulumi_config: dict[str, Any] | None = None,
    overrides: list[str] | None = None,
    read_cluster: Callable[[str], ClusterOutputs] | None = None,
) -> StackConfig:
    """Preset, then Pulumi config sections, then overrides; validated once, as a whole. A serving stack
    (`cluster.provider: stack`) takes its cluster's facts: from `read_cluster(cluster.stack)` when given (the
    program reads the live cluster stack), else the recorded outputs or the repo's cluster stack file."""
    data = read_preset(preset) if preset else {}
    data = deep_merge(data, pulumi_config or {})
    data = apply_overrides(data, overrides or [])
    reference = _cluster_reference(data)
    if reference is None:
        config = with_model_file(_validated(data), PROJECT_DIR)
        check_stack(config)
        _check_trace_file(config)
        return config
    outputs = read_cluster(reference[0]) if read_cluster is not None else recorded_outputs(*reference)
    data = serving_data(data, outputs, reference[0])
    config = _validated(data)
    uses_tier = connector_of(config).uses_tier_claim(config.cache.tier.variant)
    section = storage_section(outputs) if uses_tier else None
    if section is not None:  # the filesystem tier on the cluster's file system
        config = _validated(deep_merge(data, {"storage": section}))
    # the plan reads the mirror and the Gateway from them
    config = config.model_copy(update={"cluster": config.cluster.with_outputs(outputs)})
    config = with_model_file(config, PROJECT_DIR)
    check_stack(config)
    check_serving(config, outputs, reference[0], uses_tier)
    _check_trace_file(config)
    return config


def _check_trace_file(config: StackConfig) -> None:
    """A stack's trace is a regular file inside the project (checked without opening it; its lines are read by
    whoever uses it: workload_trace.check_project_trace)."""
    if config.workload is not None and config.workload.trace is not None:
        project_trace_path(config.workload.trace, PROJECT_DIR)


def _validated(data: dict[str, Any]) -> StackConfig:
    try:
        return StackConfig.model_validate(data)
    except ValidationError as error:
        raise from_validation_error(error, root=StackConfig) from None


def _cluster_reference(data: dict[str, Any]) -> tuple[str, str | None] | None:
    """(cluster.stack, cluster.outputs_file) of a serving stack, None otherwise (or when the cluster section is
    malformed: the whole config's validation then names the field)."""
    raw = data.get("cluster")
    kind = PROVIDER_KINDS.get(str(raw.get("provider"))) if isinstance(raw, dict) else None
    if kind is None or not kind.reads_cluster_stack:
        return None
    try:
        cluster = ClusterConfig.model_validate(raw)
    except ValidationError:
        return None
    if cluster.stack is None:
        raise ConfigError(
            "cluster.stack", None, "required with cluster.provider stack: <organization>/<project>/<stack>"
        )
    return cluster.stack, cluster.outputs_file


def recorded_outputs(reference: str, outputs_file: str | None) -> ClusterOutputs:
    """Offline: the outputs recorded in `outputs_file`, else the repo's own cluster stack (same project,
    `Pulumi.<stack>.yaml`) planned as `pulumi up` would export it."""
    if outputs_file is not None:
        return read_outputs(_outputs_json(outputs_file), outputs_file, "cluster.outputs_file")
    _, project, name = reference.split("/")
    if project != PROJECT_NAME or not stack_file_exists(name):
        raise ConfigError(
            "cluster.stack",
            reference,
            f"no Pulumi.{name}.yaml of project {PROJECT_NAME} here to plan it from; record its outputs"
            " (`pulumi stack output llmdCluster --json`) and set cluster.outputs_file",
        )
    # Read before it is loaded: a serving stack named here (itself, or one naming this one) would recurse.
    if read_stack_file(name).get(f"{CONFIG_NAMESPACE}:layer") != "cluster":
        raise ConfigError(
            "cluster.stack", reference, f"Pulumi.{name}.yaml is not a cluster stack (it sets no llmd:layer cluster)"
        )
    if name in _LOADING:  # the layers as a graph: A -> B -> ... -> A is refused where it closes
        loop = " -> ".join([*_LOADING[_LOADING.index(name) :], name])
        raise ConfigError(
            f"Pulumi.{_LOADING[-1]}.yaml: cluster.stack",
            reference,
            f"the stacks' cluster.stack form a cycle ({loop}); a cluster stack names no cluster stack",
        )
    try:
        return describe(load_named(name), name)
    except ConfigError as error:  # the cluster stack's own field: say which file it is in
        shown = f"Pulumi.{name}.yaml"
        where = error.field if error.field.startswith("Pulumi.") else f"{shown}: {error.field}"
        raise ConfigError(where, error.value, error.allowed, hidden=error.hidden) from None


def _outputs_json(outputs_file: str) -> object:
    """The JSON of a recorded outputs file: a regular file inside the project, bounded in size and nesting."""

    def refused(why: str) -> ConfigError:
        return ConfigError("cluster.outputs_file", outputs_file, f"cannot read the recorded outputs: {why}")

    try:
        data = json.loads(files.read_bytes(PROJECT_DIR / outputs_file, PROJECT_DIR).decode("utf-8"))
    except files.UnreadableError as error:
        raise refused(str(error)) from None
    except (UnicodeDecodeError, ValueError):
        raise refused("not JSON") from None
    except RecursionError:  # the decoder's own limit, far past ours
        raise refused(f"nested deeper than {files.MAX_DEPTH} levels") from None
    if files.nesting_depth(data) > files.MAX_DEPTH:
        raise refused(f"nested deeper than {files.MAX_DEPTH} levels")
    return data


def load_preset(name: str, overrides: list[str] | None = None) -> StackConfig:
    return build(name, None, overrides)


def read_stack_file(name: str) -> dict[str, Any]:
    """The `config:` block of `Pulumi.<name>.yaml`; secure values stay encrypted: each becomes OFFLINE_SECRET."""
    shown = f"Pulumi.{name}.yaml"
    data = yamlfile.load(PROJECT_DIR / shown, shown, PROJECT_DIR) or {}
    if not isinstance(data, dict):
        raise ConfigError(shown, HIDDEN, "must be a mapping (config: ...)", hidden=True)
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{shown}: config", HIDDEN, "must be a mapping", hidden=True)
    return {key: _without_ciphertext(value) for key, value in config.items()}


def _without_ciphertext(value: Any) -> Any:
    """`{secure: <ciphertext>}` (`pulumi config set --secret [--path]`) -> OFFLINE_SECRET, at any depth."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return OFFLINE_SECRET
        return {k: _without_ciphertext(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_ciphertext(v) for v in value]
    return value


def secure_sections(config: dict[str, Any]) -> list[str]:
    """The sections of a stack file that hold a secure value (anywhere in them)."""
    return [key.partition(":")[2] for key, value in config.items() if OFFLINE_SECRET in json.dumps(value)]


def stack_names(project: Path | None = None) -> list[str]:
    """The stacks of a project directory (default: this project's): its `Pulumi.<name>.yaml` files."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (project or PROJECT_DIR).glob("Pulumi.*.yaml"))


def stack_file_exists(name: str) -> bool:
    """Whether `Pulumi.<name>.yaml` is there, of any kind (a FIFO or a dangling link is read, and refused, as
    the stack it names, not taken for a preset of the same name)."""
    return os.path.lexists(PROJECT_DIR / f"Pulumi.{name}.yaml")


def load_named(name: str, overrides: list[str] | None = None) -> StackConfig:
    """NAME is a stack (`Pulumi.NAME.yaml`) if one exists, else a preset."""
    if stack_file_exists(name):
        values = read_stack_file(name)
        _LOADING.append(name)
        try:
            preset, sections = pulumi_sections(values)
            return build(preset, sections, overrides)
        except ConfigError as error:
            raise error.hiding(secure_sections(values), ()) from None
        finally:
            _LOADING.pop()
    if name not in preset_names():
        stacks = ", ".join(stack_names())
        raise ConfigError("NAME", name, f"allowed: presets {', '.join(preset_names())}; stacks {stacks}")
    return load_preset(name, overrides)
