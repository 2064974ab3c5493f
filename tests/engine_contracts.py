"""The engines' own contracts (tests/fixtures/upstream/engines), applied to rendered pods.

The contract files were read from the pinned vLLM, SGLang, LMCache, Mooncake and tpu-inference
packages (flags with types and choices, connector and config keys, env names). This module finds
every engine invocation in a render (command, args with `$(VAR)` expanded as the kubelet does, the
container's env, the config files mounted from ConfigMaps) and lists what the engine would not accept
or would silently ignore: a flag that is only an argparse prefix, a value of the wrong type, a key or
env name the engine never reads.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.catalog import versions
from tests.helpers import UPSTREAM

ENGINES = UPSTREAM / "engines"
Obj = dict[str, Any]
# Where an engine has contracts of several versions, the one a render is checked against unless its image names
# another: the version the catalog pins (vLLM 0.26.0; 0.27.1 is what llm-d's precise path moves to).
PINNED = {"vllm": versions.VLLM_VERSION.removeprefix("v")}


def versions_of(engine: str) -> list[str]:
    """The versions whose contract the fixtures hold for an engine (engine metrics files aside)."""
    return sorted(p.stem.removeprefix(f"{engine}-") for p in ENGINES.glob(f"{engine}-[0-9]*.json"))


@functools.cache
def contract(engine: str, version: str | None = None) -> Obj:
    """The contract file of an engine at `version`, or at the pinned version (the only one where one is kept)."""
    held = versions_of(engine)
    chosen = version if version in held else PINNED.get(engine, held[0] if len(held) == 1 else None)
    assert chosen in held, f"no {engine} contract for {version or 'the pinned version'} (held: {held})"
    data: Obj = json.loads((ENGINES / f"{engine}-{chosen}.json").read_text())
    return data


def image_version(image: str | None) -> str | None:
    """The version an image's tag names (`docker.io/vllm/vllm-openai:v0.27.1` -> 0.27.1), or None."""
    tag = (image or "").rpartition(":")[2]
    return tag.removeprefix("v") if re.fullmatch(r"v?\d+\.\d+\.\d+", tag) else None


@dataclass
class Invocation:
    where: str
    engine: str  # vllm | sglang | lmcache-server | mooncake-master | mooncake-client
    args: list[str]
    env: dict[str, str | None]  # None: from a field or a Secret, not known at render time
    files: dict[str, str] = field(default_factory=dict)  # mounted path -> content
    carriers: set[str] = field(default_factory=set)  # env names used only to expand $(VAR) in args
    version: str | None = None  # the engine version its image's tag names, where the fixtures hold its contract


# ---- finding the invocations ----


def _config_maps(objects: list[Obj]) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o.get("data", {}) for o in objects if o["kind"] == "ConfigMap"}


def _env(container: Obj, maps: dict[str, Obj]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for var in container.get("env", []):
        ref = var.get("valueFrom", {}).get("configMapKeyRef")
        out[var["name"]] = maps.get(ref["name"], {}).get(ref["key"]) if ref else var.get("value")
    return out


def _files(pod: Obj, container: Obj, maps: dict[str, Obj]) -> dict[str, str]:
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    out: dict[str, str] = {}
    for mount in container.get("volumeMounts", []):
        source = volumes.get(mount["name"], {}).get("configMap")
        if not source:
            continue
        data = maps.get(source["name"], {})
        paths = {i["key"]: i["path"] for i in source.get("items", [])} or {k: k for k in data}
        for key, path in paths.items():
            if mount.get("subPath") in (None, path):
                target = mount["mountPath"] if mount.get("subPath") else f"{mount['mountPath']}/{path}"
                out[target] = data.get(key, "")
    return out


def _expand(token: str, env: dict[str, str | None], used: set[str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if env.get(name) is None:
            return match.group(0)
        used.add(name)
        return env[name] or ""

    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", value, token)


def _commands(argv: list[str]) -> Iterator[tuple[list[str], dict[str, str]]]:
    """The commands a container runs, with inline `env X=1` assignments: argv itself, or each command
    of a `sh -c` script."""
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in ("sh", "bash") and argv[1] == "-c":
        lexer = shlex.shlex(argv[2], posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        command: list[str] = []
        for token in [*lexer, ";"]:
            if token in (";", "&&", "||", "|", "&"):
                if command:
                    yield _strip_prefixes(command)
                command = []
            else:
                command.append(token)
        return
    yield _strip_prefixes(argv)


def _strip_prefixes(command: list[str]) -> tuple[list[str], dict[str, str]]:
    inline: dict[str, str] = {}
    while command and command[0] in ("exec", "env"):
        command = command[1:]
        while command and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", command[0]):
            name, _, value = command[0].partition("=")
            inline[name] = value
            command = command[1:]
    return command, inline


def _engine(command: list[str]) -> tuple[str, list[str]] | None:
    base = [c.rsplit("/", 1)[-1] for c in command[:3]]
    if base[:2] == ["vllm", "serve"]:
        return "vllm", command[2:]
    if len(base) >= 3 and base[0].startswith("python") and base[1:3] == ["-m", "sglang.launch_server"]:
        return "sglang", command[3:]
    if base[:2] == ["sglang", "serve"]:
        return "sglang", command[2:]
    if base[:2] == ["lmcache", "server"]:
        return "lmcache-server", command[2:]
    if base[:1] == ["mooncake_master"]:
        return "mooncake-master", command[1:]
    if base[:1] == ["mooncake_client"]:
        return "mooncake-client", command[1:]
    return None


def invocations(objects: list[Obj], pods: Iterator[tuple[str, dict[str, str], Obj]]) -> list[Invocation]:
    maps, out = _config_maps(objects), []
    for where, _, pod in pods:
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            env = _env(container, maps)
            used: set[str] = set()
            argv = [_expand(t, env, used) for t in [*container.get("command", []), *container.get("args", [])]]
            for command, inline in _commands(argv):
                found = _engine(command)
                if found:
                    engine, args = found
                    name = f"{where}/{container['name']}"
                    files = _files(pod, container, maps)
                    tagged = image_version(container.get("image"))
                    version = tagged if tagged in versions_of(engine) else None
                    out.append(Invocation(name, engine, args, {**env, **inline}, files, used, version))
    return out


# ---- checking them ----


def _value_problem(spec: Obj, value: str | None) -> str | None:
    if not spec["takes_value"]:
        return None if value is None else "takes no value"
    if value is None:
        return None if spec["nargs"] in ("?", "*") else "needs a value"
    if "$(" in value or (spec.get("optional") and value in ("", "None")):
        return None
    if spec["choices"] is not None and spec["nargs"] not in ("+", "*"):
        choices = [str(c) for c in spec["choices"]]
        if value not in choices:
            return f"not one of {choices}"
    kind = spec["type"]
    try:
        if kind == "int":
            int(value)
        elif kind == "float":
            float(value)
        elif kind == "json":
            json.loads(re.sub(r"\b(\d+(?:\.\d+)?)[kKmMgGtT]\b", r"\1", value))
        elif kind.startswith("human_readable_int") and not re.fullmatch(r"-1|auto|\d+(\.\d+)?[kKmMgGtT]?", value):
            return "not a human-readable int"
    except ValueError as error:
        return f"not {kind}: {error}"
    return None


def argv_problems(flags: Obj, args: list[str], positionals: int) -> list[str]:
    """Exact flags only (argparse would expand a unique prefix: report it), values of the flag's type."""
    problems, i, seen = [], 0, 0
    while i < len(args):
        token = args[i]
        if not (token.startswith("-") and len(token) > 1 and not re.fullmatch(r"-\d+(\.\d+)?", token)):
            seen += 1
            if seen > positionals:
                problems.append(f"{token!r}: unexpected positional")
            i += 1
            continue
        name, eq, given = token.partition("=")
        value: str | None = given
        spec = flags.get(name)
        if spec is None:
            near = sorted(k for k in flags if k.startswith(name))
            problems.append(f"{name}: not an exact flag" + (f" (a prefix of {near})" if near else ""))
            i += 1 if eq or i + 1 >= len(args) or args[i + 1].startswith("-") else 2
            continue
        if not eq and spec["takes_value"]:
            following = args[i + 1] if i + 1 < len(args) else None
            if spec["nargs"] in ("?", "*") and (following is None or following.startswith("--")):
                value = None
            else:
                value, i = following, i + 1
        elif not eq:
            value = None
        problem = _value_problem(spec, value)
        if problem:
            problems.append(f"{name}={value!r}: {problem}")
        i += 1
    return problems


def gflags_problems(flags: Obj, args: list[str]) -> list[str]:
    problems = []
    for token in args:
        name, eq, value = token.lstrip("-").partition("=")
        spec = flags.get(name[2:] if name.startswith("no") and name[2:] in flags else name)
        if spec is None:
            problems.append(f"{token}: unknown flag")
        elif eq and "$(" not in value and not _gflag_value_ok(spec["type"], value):
            problems.append(f"{token}: not {spec['type']}")
    return problems


def _gflag_value_ok(kind: str, value: str) -> bool:
    if kind == "bool":
        return value.lower() in ("true", "false", "1", "0", "yes", "no", "t", "f", "y", "n")
    if kind.startswith(("int", "uint")):
        return re.fullmatch(r"-?\d+", value) is not None
    if kind == "double":
        return re.fullmatch(r"-?\d+(\.\d*)?([eE][-+]?\d+)?", value) is not None
    return True


def typed(description: str, value: Any) -> bool:
    """Does a JSON value have the type a key's description (`"<type>; default ...; read in ..."`) names?"""
    kind = description.split(";", 1)[0].split(" (", 1)[0].strip()
    checks: dict[str, Any] = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "list": lambda v: isinstance(v, list),
        "dict": lambda v: isinstance(v, dict),
    }
    check = checks.get(kind)
    return check is None or bool(check(value))


def kv_transfer_problems(config: Obj, version: str | None = None) -> list[str]:
    vllm, tpu = contract("vllm", version), contract("tpu-inference")
    problems, stack = [], [config]
    while stack:
        connector = stack.pop()
        problems += [
            f"kv_transfer_config.{k}: not a field" for k in connector if k not in vllm["kv_transfer_config_fields"]
        ]
        name, module = connector.get("kv_connector"), connector.get("kv_connector_module_path")
        extra = connector.get("kv_connector_extra_config") or {}
        if not module and name not in vllm["kv_connectors"]:
            problems.append(f"kv_connector {name}: not registered")
        known: Obj | None
        if name == "LMCacheMPConnector":
            known = vllm["lmcache_mp_connector_extra_config_keys"]
        elif module and module.startswith("tpu_inference"):
            known = tpu["connectors"].get(f"{module}:{name}")
            if known is None:
                problems.append(f"{module}:{name}: no such connector in tpu-inference")
        elif module:
            known = None
        elif name == "OffloadingConnector":
            known = vllm["offloading_extra_config_keys"]
        else:
            known = vllm["connector_extra_config_keys"].get(name, {})
        for key, value in extra.items():
            if known is not None and key not in known:
                problems.append(f"{name}.kv_connector_extra_config.{key}: never read")
            elif known is not None and not typed(known[key], value):
                problems.append(f"{name}.kv_connector_extra_config.{key}={value!r}: not {known[key].split(';')[0]}")
        if name == "OffloadingConnector":
            problems += _tier_problems(extra.get("secondary_tiers", []), version)
        if name == "MultiConnector":
            stack.extend(extra.get("connectors", []))
    return problems


def _tier_problems(tiers: list[Obj], version: str | None = None) -> list[str]:
    known, problems = contract("vllm", version)["offloading_secondary_tiers"], []
    for tier in tiers:
        spec = known.get(tier.get("type"))
        if spec is None:
            problems.append(f"secondary tier {tier.get('type')!r}: unknown")
            continue
        problems += [
            f"secondary tier {tier['type']}.{k}: not a parameter" for k in tier if k not in (*spec["params"], "type")
        ]
        problems += [
            f"secondary tier {tier['type']}: {k} missing"
            for k, p in spec["params"].items()
            if p["required"] and k not in tier
        ]
    return problems


def _known_env(prefix: str) -> set[str]:
    vllm, sglang, lmcache, tpu = (contract(e) for e in ("vllm", "sglang", "lmcache", "tpu-inference"))
    return {
        "VLLM_": {*vllm["env_vars"], *vllm["env_vars_other"], *vllm["env_vars_read_outside_envs_py"]},
        "SGLANG_": {*sglang["env_fields"], *sglang["env_vars_read_directly"], *sglang["env_vars_deprecated_aliases"]},
        "LMCACHE_": set(lmcache["env_vars"]),
        "TPU_OFFLOAD_": {*tpu["env_vars"], *tpu["env_read_directly_outside_envs_py"]},
    }[prefix]


def env_problems(invocation: Invocation) -> list[str]:
    prefixes = ("SGLANG_",) if invocation.engine == "sglang" else ("VLLM_", "LMCACHE_", "TPU_OFFLOAD_")
    problems = []
    for name, value in sorted(invocation.env.items()):
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None or name in invocation.carriers:
            continue
        if name not in _known_env(prefix) and not name.startswith(tuple(contract("lmcache")["env_prefixes"])):
            problems.append(f"env {name}: never read")
        elif value is not None:
            problems += _env_value_problems(name, value)
    return problems


def _env_value_problems(name: str, value: str) -> list[str]:
    if name == "LMCACHE_EXTRA_CONFIG":
        known = contract("lmcache")["extra_config_keys"]
        extra: Obj = json.loads(value)
        problems = [f"LMCACHE_EXTRA_CONFIG.{k}: never read" for k in extra if k not in known]
        return problems + [
            f"LMCACHE_EXTRA_CONFIG.{k}={v!r}: not {known[k].split(';')[0]}"
            for k, v in extra.items()
            if k in known and not typed(known[k], v)
        ]
    keys = {spec["env"]: spec for spec in contract("lmcache")["config_keys"].values() if spec.get("env")}
    spec = keys.get(name)
    if spec and spec["env_converter"] in ("int", "float"):
        try:
            {"int": int, "float": float}[spec["env_converter"]](value)
        except ValueError:
            return [f"env {name}={value!r}: not {spec['env_converter']}"]
    return []


def file_problems(invocation: Invocation) -> list[str]:
    problems: list[str] = []
    path = invocation.env.get("MOONCAKE_CONFIG_PATH")
    if invocation.engine == "vllm" and path:
        known = contract("mooncake")["vllm_mooncake_store"]["config_file_keys"]
        assert path in invocation.files, f"{path} is not mounted"
        config: Obj = json.loads(invocation.files[path])
        problems += [f"{path}:{k}: never read" for k in config if k not in known]
        problems += [
            f"{path}:{k}={v!r}: wrong type" for k, v in config.items() if k in known and not typed(known[k], v)
        ]
    if invocation.engine == "mooncake-master":
        config_path = next((a.split("=", 1)[1] for a in invocation.args if a.startswith("--config_path=")), None)
        if config_path:
            assert config_path in invocation.files, f"{config_path} is not mounted"
            known = contract("mooncake")["master_config_keys"]
            master: Obj = yaml.safe_load(invocation.files[config_path])
            problems += [f"{config_path}:{k}: not read by the master" for k in master if k not in known]
    return problems


def problems(invocation: Invocation) -> list[str]:
    """Everything the engine would refuse or ignore in this invocation."""
    engine, args, version = invocation.engine, invocation.args, invocation.version
    if engine == "vllm":
        found = argv_problems(contract("vllm", version)["serve_flags"], args, positionals=1)
        for flag in ("--kv-transfer-config",):
            for i, token in enumerate(args):
                if token == flag and i + 1 < len(args) and "$(" not in args[i + 1]:
                    found += kv_transfer_problems(json.loads(args[i + 1]), version)
                elif token.startswith(f"{flag}=") and "$(" not in token:
                    found += kv_transfer_problems(json.loads(token.split("=", 1)[1]), version)
    elif engine == "sglang":
        found = argv_problems(contract("sglang")["serve_flags"], args, positionals=0)
    elif engine == "lmcache-server":
        found = argv_problems(contract("lmcache")["server_flags"], args, positionals=0)
    else:
        flags = contract("mooncake")["master_flags" if engine == "mooncake-master" else "client_flags"]
        found = gflags_problems(flags, args)
    return found + env_problems(invocation) + file_problems(invocation)


# ---- the metrics each engine's wheel defines (engines/metrics.py) ----

# The engine versions whose metric names the fixtures hold (<engine>-metrics-<version>.json).
METRIC_VERSIONS = {"vllm": "0.26.0", "sglang": "0.5.16", "lmcache": "0.5.6"}
_EXPORT_SUFFIXES = ("_total", "_bucket", "_count", "_sum")  # prometheus_client adds these to the defined name


@functools.cache
def engine_metrics(engine: str) -> dict[str, list[str]]:
    """The metric names an engine's pinned wheel spells, each with the modules that spell it."""
    path = ENGINES / f"{engine}-metrics-{METRIC_VERSIONS[engine]}.json"
    metrics: dict[str, list[str]] = json.loads(path.read_text())["metrics"]
    return metrics


def metric_defined(name: str, metrics: dict[str, list[str]]) -> bool:
    """Whether `name` is one of `metrics`, as defined or with an export suffix prometheus_client adds."""
    return name in metrics or any(name.endswith(s) and name.removesuffix(s) in metrics for s in _EXPORT_SUFFIXES)


def engine_of_metric(name: str) -> str | None:
    """The engine whose prefix a metric carries (`vllm:`, `sglang:`, `lmcache:`), None for any other metric."""
    engine = name.split(":", 1)[0] if ":" in name else None
    return engine if engine in METRIC_VERSIONS else None
