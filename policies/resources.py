"""Read what the rules need out of resource inputs: pod specs, containers, connector configs, chart values."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from components.units import ByteSize

Props = dict[str, Any]
WORKLOAD_TYPES = {
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:batch/v1:Job",
}
LWS_TYPE = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
CHART_TYPE = "kubernetes:helm.sh/v4:Chart"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
CLAIM_TYPE = "kubernetes:core/v1:PersistentVolumeClaim"


@dataclass(frozen=True)
class Resource:
    type: str
    name: str
    props: Props
    urn: str = ""


@dataclass(frozen=True)
class Pod:
    owner: Resource
    spec: Props
    labels: dict[str, str]

    def containers(self, init: bool = True) -> Iterator[Props]:
        yield from self.spec.get("containers") or []
        if init:
            yield from self.spec.get("initContainers") or []


def pods(resources: list[Resource]) -> Iterator[Pod]:
    for r in resources:
        templates: list[Props] = []
        if r.type in WORKLOAD_TYPES:
            templates = [(r.props.get("spec") or {}).get("template") or {}]
        elif r.type == LWS_TYPE:
            lws = ((r.props.get("spec") or {}).get("leaderWorkerTemplate")) or {}
            templates = [t for t in (lws.get("leaderTemplate"), lws.get("workerTemplate")) if t]
        for template in templates:
            labels = dict(((template.get("metadata") or {}).get("labels")) or {})
            if r.type == LWS_TYPE:  # the LeaderWorkerSet controller labels every pod with its set's name
                labels[LWS_NAME_LABEL] = str((r.props.get("metadata") or {}).get("name", ""))
            yield Pod(r, template.get("spec") or {}, labels)


def _argv(container: Props) -> list[str]:
    """The container's command line; a `sh -c` script is split like a shell would."""
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    if len(argv) >= 2 and argv[-2] == "-c" and argv[0].endswith("sh"):
        try:
            return shlex.split(argv[-1].replace("\\\n", " "))
        except ValueError:
            return argv
    return [str(a) for a in argv]


def args(container: Props) -> list[str]:
    return _argv(container)


def kv_transfer_config(container: Props) -> Props | None:
    argv = _argv(container)
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--kv-transfer-config" and i + 1 < len(argv) else None
        if arg.startswith("--kv-transfer-config="):
            value = arg.split("=", 1)[1]
        if value is not None:
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                return None  # e.g. $(LMCACHE_KV_CONFIG), resolved from a ConfigMap at start-up
            return parsed if isinstance(parsed, dict) else None
    return None


def connectors(config: Props | None) -> list[Props]:
    """A connector config and, for a MultiConnector, the connectors inside it."""
    if not config:
        return []
    inner = (config.get("kv_connector_extra_config") or {}).get("connectors") or []
    return [config, *inner]


def env(container: Props) -> dict[str, Props]:
    return {e["name"]: e for e in container.get("env") or [] if "name" in e}


def quantity(value: Any) -> ByteSize | None:
    try:
        return ByteSize.parse(str(value))
    except ValueError:
        return None


def memory_volumes(pod: Pod) -> list[Props]:
    return [v for v in pod.spec.get("volumes") or [] if (v.get("emptyDir") or {}).get("medium") == "Memory"]


def chart_values(resource: Resource) -> Props:
    values = resource.props.get("values") or {}
    return values if isinstance(values, dict) else {}


def endpoint_picker_config(values: Props) -> Props:
    """The EPP plugin config the chart loads, in either chart layout (map, or {file: YAML string})."""
    epp = (values.get("router") or {}).get("epp") or {}
    if isinstance(epp.get("pluginsConfig"), dict):
        return dict(epp["pluginsConfig"])
    custom = epp.get("pluginsCustomConfig") or {}
    text = custom.get(epp.get("pluginsConfigFile", ""))
    loaded = yaml.safe_load(text) if isinstance(text, str) else None
    return loaded if isinstance(loaded, dict) else {}


def selects(match_labels: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(match_labels) and all(labels.get(k) == v for k, v in match_labels.items())


def image_tag(image: str) -> str | None:
    """The tag of an image reference (None when it has no tag); digests count as pinned."""
    if "@" in image:
        return "@" + image.split("@", 1)[1]
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def flag(argv: list[str], name: str) -> str | None:
    """The value of `name` in a command line, as `name value` or `name=value`."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def model_source(container: Props) -> str | None:
    """What a vLLM or SGLang container loads (a Hub id or a local path): `vllm serve MODEL`, `--model=`,
    or `--model-path=`."""
    argv = _argv(container)
    for i, arg in enumerate(argv[:-1]):
        if arg == "serve" and argv[i + 1] and not argv[i + 1].startswith("-"):
            return argv[i + 1]
    return flag(argv, "--model") or flag(argv, "--model-path")


def served_model(container: Props) -> str | None:
    """The name clients and the router ask for: `--served-model-name`, else what the container loads."""
    return flag(_argv(container), "--served-model-name") or model_source(container)


def _digits(text: str) -> bool:
    """ASCII digits only: str.isdigit also takes superscript and fullwidth digits, which int() rejects or reads."""
    return text.isascii() and text.isdigit()


def local_engines(container: Props) -> int:
    """Engines one pod runs (vLLM's data-parallel ranks on it), each with connectors of its own."""
    argv = _argv(container)
    value = flag(argv, "--data-parallel-size-local") or flag(argv, "--data-parallel-size")
    return int(value) if value and _digits(value) else 1


def offload_bytes(container: Props) -> int | None:
    """The OffloadingConnector's `cpu_bytes_to_use` x the pod's engines (alone or inside a MultiConnector): what
    its CPU tier reserves in the pod (None: it runs none; not a whole number: 0, which no limit fails)."""
    for config in connectors(kv_transfer_config(container)):
        value = (config.get("kv_connector_extra_config") or {}).get("cpu_bytes_to_use")
        if value is not None:
            whole = isinstance(value, int) and not isinstance(value, bool)
            return value * local_engines(container) if whole else 0
    return None


def rwx_claims(resources: list[Resource]) -> set[str]:
    """The names of the stack's ReadWriteMany PersistentVolumeClaims (the claims every pod can share)."""
    return {
        str((r.props.get("metadata") or {}).get("name"))
        for r in resources
        if r.type == CLAIM_TYPE and "ReadWriteMany" in ((r.props.get("spec") or {}).get("accessModes") or [])
    }
