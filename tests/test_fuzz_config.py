"""Property (issue 11 §1): any stack config, however hostile, either stops with one `invalid stack config:`
line, or plans objects the platform accepts: strict schemas, names, labels, images and quantities.

Configs are generated from StackConfig itself, so every key is reached, including keys added later:
a preset (or none), then a few fields set to valid, edge or wrong values, and unknown keys at any level.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from collections.abc import Iterator
from fractions import Fraction
from functools import cache as functools_cache
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from components.catalog import labels
from components.specs.router_values import router_endpoint
from components.units import ByteSize
from stacks.config import StackConfig, formats, loading
from stacks.config.cross_checks import NAME_LIMITS
from stacks.config.errors import ConfigError
from stacks.planning.plan import StackPlan, plan
from stacks.review.render import kubernetes_objects
from tests.helpers import validate

settings.register_profile(
    "fuzz", max_examples=1000, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
# CI explores the same examples on every run; a developer's run explores new ones.
settings.register_profile("fuzz-ci", parent=settings.get_profile("fuzz"), derandomize=True)
PROFILE = "fuzz-ci" if os.environ.get("CI") else "fuzz"

PRESETS = loading.preset_names()
Path = tuple[str, ...]  # "*" stands for a key of a mapping (node pools) or an item of a list (taints)


def _unwrap(annotation: Any) -> tuple[list[Any], bool]:
    """The alternatives of an annotation (Annotated and Optional peeled off) and whether None is allowed."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        options: list[Any] = []
        optional = False
        for arg in typing.get_args(annotation):
            inner, none = _unwrap(arg)
            options += inner
            optional = optional or none or arg is type(None)
        return [o for o in options if o is not type(None)], optional
    return [annotation], False


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _fields(model: type[BaseModel], prefix: Path = ()) -> Iterator[tuple[Path, Any, FieldInfo]]:
    """Every field of the config, nested sections and the models inside mappings and lists included."""
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        yield path, info.annotation, info
        for option in _unwrap(info.annotation)[0]:
            if _is_model(option):
                yield from _fields(option, path)
            for inner in typing.get_args(option):
                if _is_model(inner):
                    yield from _fields(inner, (*path, "*"))


FIELDS = list(_fields(StackConfig))


def _preset_paths(name: str) -> dict[Path, list[Any]]:
    """The values a preset gives each field (generalised over pool keys and list items)."""
    out: dict[Path, list[Any]] = {}

    def walk(value: Any, path: Path) -> None:
        out.setdefault(path, []).append(value)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, "*" if path == ("node_pools",) else str(k)))
        elif isinstance(value, list):
            for item in value:
                walk(item, (*path, "*"))

    walk(loading.read_preset(name), ())
    return out


PRESET_PATHS = {name: _preset_paths(name) for name in PRESETS}


def _preset_values() -> dict[Path, list[Any]]:
    """Values the presets give each field: plausible input."""
    out: dict[Path, list[Any]] = {}
    for paths in PRESET_PATHS.values():
        for path, values in paths.items():
            out.setdefault(path, []).extend(values)
    return out


PRESET_VALUES = _preset_values()
_PRESET_POOLS = {k for n in PRESETS for k in loading.read_preset(n).get("node_pools", {})}
POOL_KEYS = [*sorted(_PRESET_POOLS), "h_100", "system", "Pool", "a" * 45, ""]
# Names at the limits the consumers apply: the chart's 40-character cut (and its 84-character ClusterRole
# name of release and namespace), Helm's 53, a DNS label's 63.
CHART_LIMITS = [n * "a" for n in (37, 38, 39, 40, 41, 53)] + ["a" * 39 + "-b", "r" + "-x" * 26]
# Look-alikes: Unicode digits and letters, a trailing newline, a no-break space.
LOOK_ALIKES = [
    "\uff14", "\uff11\uff12", "v1.0.\uff10", "1.\uff13\uff13", "llmd\n", "4\n", "\uff4clmd", "\u0661\u0662",
    "e2-standard-8\n", "a\u00a0b", "\u00b2",
]  # fmt: skip
NAMES = [
    "llmd", "a", "a" * 54, "a" * 63, "a" * 64, "1abc", "-x", "x-", "UPPER", "a_b", "a.b", "ñame", " ", "",
    "kube-system", "default", *CHART_LIMITS,
]  # fmt: skip
STRINGS = [
    *NAMES,
    "oci://ghcr.io/llm-d/charts/x",
    "docker.io/vllm/vllm-openai:v0.26.0",
    "vllm openai",
    "Vllm/X:1",
    "x@sha256:abc",
    "10.0.0.0/16",
    "172.16.0.0/28",
    "999.1.1.1/16",
    "us-central1",
    "us-central1-a",
    "us-east-1",
    "us-east-1a",
    "my-gcp-project",
    "500m",
    "0",
    "1e3",
    "15m",
    "0m",
    "v1.0.0",
    "latest",
    "auto",
    "a" * 300,
    "banana",
    "1.99",
    "projects/p/global/networks/n",
    "m6i.2xlarge",
    "cr-0123456789abcdef0",
    *LOOK_ALIKES,
]
INT32 = 2**31 - 1
# Sizes at the unit boundaries (a bare byte count, a unit short of a MiB) and the int32/int64 ones.
SIZES = [
    "1Gi", "1GiB", "0", "1", "2", "1023", "1048575", "1MiB", "133Mi", "4GiB", "300GiB", "900 GiB", "2TiB",
    "32TiB", "64TiB", "1.5Gi", "lots", "-1Gi", "\uff14GiB", "1Gi\n", str(INT32), str(2**31), str(2**63), "8EiB",
]  # fmt: skip
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=2),
)


def _bounds(info: FieldInfo | None) -> tuple[float, float]:
    low, high = -(2.0**63), 2.0**63
    for meta in info.metadata if info else []:
        for attr in ("ge", "gt"):
            if getattr(meta, attr, None) is not None:
                low = float(getattr(meta, attr))
        for attr in ("le", "lt"):
            if getattr(meta, attr, None) is not None:
                high = float(getattr(meta, attr))
    return low, high


def _numbers(info: FieldInfo | None, integral: bool) -> st.SearchStrategy[Any]:
    low, high = _bounds(info)
    edges = [0, -1, 1, 2, INT32, INT32 + 1, 2**63 - 1, 2**63, 10**30, 0.5, 1e-9, math.nan, math.inf]
    for bound in (low, high):
        if math.isfinite(bound):
            edges += [bound - 1, bound, bound + 1, bound - 0.001, bound + 0.001]
    if integral:
        edges = [int(e) if isinstance(e, float) and e.is_integer() else e for e in edges]
        inside: st.SearchStrategy[Any] = st.integers(int(max(low, -(2**31))), int(min(high, 2**31)))
    else:
        inside = st.floats(max(low, -1e6), min(high, 1e6), allow_nan=False)
    return st.one_of(inside, st.sampled_from(edges), st.sampled_from([str(e) for e in edges[:4]]))


def _near_misses(value: str) -> list[str]:
    """A valid value bent the ways users bend them: case, a leading digit, '_', length, spaces, empty."""
    return [value.upper(), f"1{value}", f"{value}_x", value * 8, f"{value} ", f"-{value}", "", f"{value}-" * 3]


def _values(annotation: Any, info: FieldInfo | None, path: Path) -> st.SearchStrategy[Any]:
    options, optional = _unwrap(annotation)
    known = PRESET_VALUES.get(path, [])
    default = [] if info is None or info.default in (None, PydanticUndefined) else [info.default]
    default = [d for d in default if not isinstance(d, BaseModel)]
    plausible = [v.human() if isinstance(v, ByteSize) else v for v in [*known, *default]]
    choices: list[st.SearchStrategy[Any]] = [JUNK]
    if optional:
        choices.append(st.none())
    for option in options:
        origin = typing.get_origin(option)
        if origin is typing.Literal:
            choices += [st.sampled_from(typing.get_args(option))] * 3
        elif option is bool:
            choices.append(st.booleans())
        elif option is int:
            choices += [_numbers(info, integral=True)] * 2
        elif option is float:
            choices += [_numbers(info, integral=False)] * 2
        elif option is ByteSize:
            choices += [st.sampled_from(SIZES), st.integers(-1, 2**66), st.sampled_from([1, 2, 1023, INT32, 2**63])]
        elif option is str:
            near = [m for v in plausible if isinstance(v, str) for m in _near_misses(v)]
            choices += [st.sampled_from(near or STRINGS), st.sampled_from(STRINGS), st.text(max_size=70)]
        elif _is_model(option):
            choices.append(_section(option, path))
        elif origin is dict:
            value_type = typing.get_args(option)[1]
            keys = st.sampled_from(POOL_KEYS) if _is_model(value_type) else _label_keys
            choices.append(st.dictionaries(keys, _values(value_type, None, (*path, "*")), max_size=3))
        elif origin is list:
            choices.append(st.lists(_values(typing.get_args(option)[0], None, (*path, "*")), max_size=4))
    anything = st.one_of(*choices)
    if not plausible:
        return anything
    # Half the time a value some preset uses (hypothesis leans to the first element: True).
    return st.sampled_from([True, False]).flatmap(lambda p: st.sampled_from(plausible) if p else anything)


_label_keys = st.sampled_from(["app", "example.com/pool", "bad key", "-x", "a" * 64, "a/b/c", "", "x/"])


def _section(model: type[BaseModel], path: Path) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping of a few of the model's fields (required ones usually present)."""
    names = list(model.model_fields)
    fields = {n: _values(model.model_fields[n].annotation, model.model_fields[n], (*path, n)) for n in names}
    return st.fixed_dictionaries({}, optional=fields)


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


UNKNOWN_KEYS = ["colour", "hfToken", "replica", "ünïcode", "", "a\nb"]


def _applies(path: Path, preset: str | None) -> bool:
    """A field of a section the preset has (a GKE setting on a GKE preset), or of a top-level section
    that applies to every stack (`lmcache` applies only with its connector)."""
    if preset is not None and path[:-1] in PRESET_PATHS[preset]:
        return True
    return len(path) == 1 or (len(path) == 2 and path[0] != "lmcache")


_MOSTLY = st.sampled_from([True] * 9 + [False])  # hypothesis leans to the first element

# Issue 20's classes, aimed: the fields where a value passes every check of its own and breaks later
# (names the chart cuts, bandwidths without their unit, look-alike digits, cloud fields, sizes no node
# holds), each with values at the edges that matter to it.
BANDWIDTHS = [1, 2, "1", "2", "1023", "1MiB", "2MiB", "50MiB", "10GiB", "1TiB", INT32, "\uff14GiB"]
HOSTILE: list[tuple[Path, list[Any]]] = [
    (("router", "release"), CHART_LIMITS),
    (("namespace",), ["a" * 37, "a" * 38, "n" * 63, "kube-system", "default", "llmd\n", "gmp-system"]),
    (("router", "epp_resources", "cpu"), [*LOOK_ALIKES, "4", "500m", "0.5"]),
    (("router", "proxy_resources", "cpu"), [*LOOK_ALIKES, "1", "250m"]),
    (("router", "version"), ["v0.10.0", "v1.0.\uff10", "v1.0.0\n"]),
    (("storage", "read_bandwidth"), BANDWIDTHS),
    (("monitoring", "alerts", "min_load_bandwidth"), BANDWIDTHS),
    (("monitoring", "enabled"), [True]),
    (("cache", "tier", "cpu"), ["32TiB", "31TiB", "2TiB", "\uff14GiB", "4GiB\n"]),
    (("cache", "tensor_parallelism"), [8, 16, 64]),
    (("model_cache", "mode"), ["dedicated"]),
    (("model_cache", "size"), ["1GiB", "1MiB", "2TiB"]),
    (("cluster", "gke", "network"), ["banana", "Bad_Net", "projects/my-project/global/networks/n", "n\n"]),
    (("cluster", "gke", "subnetwork"), ["s", "projects/my-project/regions/europe-west4/subnetworks/s"]),
    (("cluster", "gke", "system_machine_type"), ["banana", "e2-standard-8\n", "n2-standard-16"]),
    (("cluster", "eks", "version"), ["1.99", "1.\uff13\uff13", "1.33\n", "1.32"]),
    (("cluster", "eks", "system_instance_type"), ["banana", "m6i.2xlarge\n", "m7i.4xlarge"]),
    (("cluster", "eks", "account_id"), ["\uff11" * 12, "123456789012\n", "123456789012"]),
]


@st.composite
def stack_configs(draw: st.DrawFn) -> tuple[str | None, dict[str, Any]]:
    """A preset (or none), then up to four changed fields, mostly ones that apply to it."""
    preset = draw(st.sampled_from([None, *PRESETS]))
    applicable = [f for f in FIELDS if _applies(f[0], preset)]
    data: dict[str, Any] = {}
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 1, 2, 2, 3, 4]))):
        path, annotation, info = draw(st.sampled_from(applicable if draw(_MOSTLY) else FIELDS))
        if "*" in path:  # a pool or a list item: the field of one of them
            star = path.index("*")
            if path[star - 1] == "taints":
                _set(data, list(path[:star]), [draw(_section(_taint_model(), path[: star + 1]))])
                continue
            path = (*path[:star], draw(st.sampled_from(POOL_KEYS)), *path[star + 1 :])
        _set(data, list(path), draw(_values(annotation, info, path)))
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        path, values = draw(st.sampled_from(HOSTILE))
        _set(data, list(path), draw(st.sampled_from(values)))
    if not draw(_MOSTLY):
        path, _, _ = draw(st.sampled_from(FIELDS))
        prefix = [p for p in path[: draw(st.integers(0, len(path) - 1))] if p != "*"]
        _set(data, [*prefix, draw(st.sampled_from(UNKNOWN_KEYS))], draw(JUNK))
    return preset, data


def _taint_model() -> type[BaseModel]:
    from stacks.config import Taint

    return Taint


# --- what the platform accepts ----------------------------------------------------------------------

# The Kubernetes quantity grammar (apimachinery resource.Quantity), ASCII digits, the whole text.
_QUANTITY = re.compile(
    r"(?P<n>[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+))(?P<s>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?", re.ASCII
)
_SUFFIX: dict[str, int | Fraction] = {
    "": 1,
    "m": Fraction(1, 1000),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_SUFFIX |= {f"{s}i": 1024 ** (i + 1) for i, s in enumerate("KMGTPE")}
INT64 = 2**63 - 1


def quantity(value: Any) -> Fraction:
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(int(value))
    match = _QUANTITY.fullmatch(str(value))
    assert match, f"{value!r} is not a Kubernetes quantity"
    suffix = match["s"] or ""
    scale = Fraction(10) ** int(suffix[1:]) if suffix[:1] in ("e", "E") else _SUFFIX[suffix]
    return Fraction(match["n"]) * scale


def _check_quantities(obj: Any, where: str) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("requests", "limits", "capacity") and isinstance(value, dict):
                for resource, amount in value.items():
                    q = quantity(amount)
                    assert q >= 0 and q * 1000 <= INT64, f"{where}.{key}.{resource} = {amount!r} out of range"
            elif key == "sizeLimit":
                q = quantity(value)
                assert 0 < q <= INT64, f"{where}.sizeLimit = {value!r}"
            else:
                _check_quantities(value, f"{where}.{key}")
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            _check_quantities(item, f"{where}[{i}]")


# Integer fields of the Kubernetes API that are int32 (the rest of the API's integers are int64).
INT32_FIELDS = {
    "failureThreshold", "successThreshold", "periodSeconds", "initialDelaySeconds", "timeoutSeconds",
    "replicas", "containerPort", "hostPort", "port", "targetPort", "number", "backoffLimit", "completions",
    "parallelism", "ttlSecondsAfterFinished", "defaultMode", "mode", "maxUnavailable", "maxSurge", "size",
    "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds", "weight", "partition",
}  # fmt: skip
# pulumi-kubernetes reads `pulumi.com/timeoutSeconds` as seconds of a Go time.Duration (int64 nanoseconds).
MAX_TIMEOUT_SECONDS = INT64 // 10**9


def _check_integers(obj: Any, where: str) -> None:
    """Every integer within its field's type: int32 where the API says so, else int64; no float for an int."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, int) and not isinstance(value, bool):
                high = INT32 if key in INT32_FIELDS else INT64
                assert -high - 1 <= value <= high, (
                    f"{where}.{key} = {value} out of {'int32' if high == INT32 else 'int64'}"
                )
            else:
                _check_integers(value, f"{where}.{key}")
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            _check_integers(item, f"{where}[{i}]")


def _check_timeout(meta: dict[str, Any], where: str) -> None:
    timeout = (meta.get("annotations") or {}).get("pulumi.com/timeoutSeconds")
    if timeout is not None:
        assert re.fullmatch(r"[0-9]+", timeout, re.ASCII), f"{where}: timeoutSeconds {timeout!r}"
        assert 0 < int(timeout) <= MAX_TIMEOUT_SECONDS, f"{where}: timeoutSeconds {timeout} past the engine's"


def _check_labels(labels: dict[str, Any] | None, where: str) -> None:
    for key, value in (labels or {}).items():
        formats.label_key(key)
        assert isinstance(value, str), f"{where}: label {key} = {value!r} is not a string"
        formats.label_value(value)


def _pod_specs(obj: Any) -> Iterator[dict[str, Any]]:
    if isinstance(obj, dict):
        if "containers" in obj and isinstance(obj["containers"], list):
            yield obj
        for value in obj.values():
            yield from _pod_specs(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from _pod_specs(item)


def check_object(obj: dict[str, Any]) -> None:
    """Strict schema, then what the schemas leave to the API server: names, labels, images, quantities."""
    validate(obj)
    meta, kind = obj["metadata"], obj["kind"]
    name = meta["name"]
    if kind == "Service":
        formats.dns_1035_label(name)
    elif kind == "Namespace":
        formats.dns_label(name)
    else:
        formats.dns_subdomain(name)
    if "namespace" in meta:
        formats.dns_label(meta["namespace"])
    _check_labels(meta.get("labels"), f"{kind}/{name}")
    for key in meta.get("annotations") or {}:
        formats.label_key(key)
    for pod in _pod_specs(obj.get("spec", {})):
        for container in [*pod.get("initContainers", []), *pod["containers"]]:
            formats.dns_label(container["name"])
            formats.image_reference(container["image"])
            for port in container.get("ports", []):
                assert 0 < port["containerPort"] < 65536
        for volume in pod.get("volumes", []):
            formats.dns_label(volume["name"])
    for selector in _find(obj.get("spec", {}), "matchLabels"):
        _check_labels(selector, f"{kind}/{name} selector")
    _check_quantities(obj, f"{kind}/{name}")
    _check_integers(obj, f"{kind}/{name}")
    _check_timeout(meta, f"{kind}/{name}")


def _find(obj: Any, key: str) -> Iterator[Any]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                yield v
            yield from _find(v, key)
    elif isinstance(obj, list):
        for item in obj:
            yield from _find(item, key)


def plan_objects(stack_plan: StackPlan) -> list[dict[str, Any]]:
    """Every Kubernetes object the plan holds (what the components declare), wherever it sits."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict) and "apiVersion" in value and "kind" in value and "metadata" in value:
            found.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))

    for f in dataclasses.fields(stack_plan):
        walk(getattr(stack_plan, f.name))
    return found


def check_cloud_names(stack_plan: StackPlan) -> None:
    cluster = stack_plan.config.cluster
    if cluster.provider == "existing":
        return
    for name in [cluster.name, *(p.name for p in stack_plan.pools)]:
        formats.dns_1035_label(name, NAME_LIMITS[cluster.provider])


def check_one_line_or_valid(preset: str | None, data: dict[str, Any]) -> StackPlan | None:
    try:
        stack_plan = plan(loading.build(preset, data))
    except ConfigError as error:
        text = str(error)
        assert text.startswith("invalid stack config: ")
        assert text.isprintable(), text  # one line: no newline, nothing a terminal would act on
        return None
    objects = plan_objects(stack_plan)
    assert objects
    for obj in objects:
        check_object(obj)
    check_cloud_names(stack_plan)
    check_router_names(stack_plan)
    _check_quantities(stack_plan.router_values, "router values")
    _check_integers(stack_plan.router_values, "router values")
    return stack_plan


def check_router_names(stack_plan: StackPlan) -> None:
    """The names the chart derives (its 40-character cut included) are the ones the stack's clients use."""
    config = stack_plan.config
    service = labels.router_name(config.router.release)
    formats.dns_1035_label(service)
    assert len(labels.router_cluster_rbac_name(config.router.release, config.namespace)) + 2 <= 84
    host = urlsplit(router_endpoint(config.router.release, config.namespace)).hostname or ""
    assert host.split(".")[0] == service
    if stack_plan.inference_pool is not None:
        assert stack_plan.inference_pool["spec"]["endpointPickerRef"]["name"] == service


OUTCOMES: dict[str, int] = {"rejected": 0, "planned": 0}


@settings(settings.get_profile(PROFILE))
@given(stack_configs())
def test_any_config_is_one_line_or_objects_the_platform_accepts(case: tuple[str | None, dict[str, Any]]) -> None:
    OUTCOMES["planned" if check_one_line_or_valid(*case) else "rejected"] += 1


def test_the_generated_configs_reach_both_outcomes_and_every_key() -> None:
    """The property above proves little if nearly every config were rejected (or none were)."""
    if OUTCOMES["planned"] + OUTCOMES["rejected"] < 1000:
        pytest.skip("runs after the property test, in the same session")
    assert OUTCOMES["planned"] >= 100, OUTCOMES
    assert OUTCOMES["rejected"] >= 100, OUTCOMES
    assert len(FIELDS) >= 100  # every field of StackConfig, nested ones included


@settings(settings.get_profile(PROFILE), max_examples=12)
@given(stack_configs())
def test_accepted_configs_render_under_the_mock_engine(case: tuple[str | None, dict[str, Any]]) -> None:
    """A few of them all the way through Pulumi: the recorded objects pass the same checks."""
    from stacks.review import offline

    stack_plan = check_one_line_or_valid(*case)
    if stack_plan is None:
        return
    for obj in kubernetes_objects(offline.record(stack_plan, "fuzz").resources):
        check_object(obj)


@settings(settings.get_profile(PROFILE), max_examples=8)
@given(stack_configs())
@example((None, {"monitoring": {"enabled": True}, "router": {"release": "a" * 37}}))  # a 67-character ClusterRole
def test_accepted_configs_router_values_render_through_the_real_chart(case: tuple[str | None, dict[str, Any]]) -> None:
    """A small sample through the real Helm on the real chart: the chart accepts the values, its objects pass
    the same checks, and the Service the stack's endpoint names is one it creates."""
    from tests.helm import CHART_VERSION, ChartInputs, template

    preset, data = case
    router = data.get("router")
    data = {**data, "router": {**(router if isinstance(router, dict) else {}), "version": CHART_VERSION}}
    stack_plan = check_one_line_or_valid(preset, data)
    if stack_plan is None:
        return
    config = stack_plan.config
    objects = template(ChartInputs(config.router.release, config.namespace, stack_plan.router_values)).objects
    for obj in objects:
        check_object(obj)
    services = {o["metadata"]["name"] for o in objects if o["kind"] == "Service"}
    assert labels.router_name(config.router.release) in services


# --- malformed stack files ---------------------------------------------------------------------------

_GOOD_FILE = "config:\n  llmd:preset: dev\n  llmd:cache:\n    replicas: 1\n    tier: {cpu: 4GiB}\n"


def _alias_bomb(levels: int, width: int) -> str:
    lines = ["a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nconfig:\n  llmd:description: *a{levels - 1}\n"


@st.composite
def stack_files(draw: st.DrawFn) -> str:
    """A stack file bent the ways files get bent: a tab, a cut, an unclosed bracket, a duplicated key, a stray
    character, nested aliases; or not bent at all."""
    text = _GOOD_FILE
    kind = draw(st.sampled_from(["tab", "cut", "bracket", "duplicate", "insert", "bomb", "none"]))
    at = draw(st.integers(0, len(text)))
    if kind == "tab":
        text = text[:at] + "\t" + text[at:]
    elif kind == "cut":
        text = text[:at]
    elif kind == "bracket":
        text = text.replace("{cpu: 4GiB}", draw(st.sampled_from(["{cpu: 4GiB", "[4GiB", "{cpu: [", "'4GiB"])))
    elif kind == "duplicate":
        text += draw(st.sampled_from(["  llmd:preset: gpu-vllm-native-cpu\n", "  llmd:cache: {}\n"]))
    elif kind == "insert":
        text = (
            text[:at]
            + draw(st.sampled_from([":", "-", "&", "*x", "!!python/object:os.system", "%", "\x00", "'"]))
            + text[at:]
        )
    elif kind == "bomb":
        text = _alias_bomb(draw(st.integers(2, 9)), draw(st.integers(2, 10)))
    return text


@settings(settings.get_profile(PROFILE), max_examples=200)
@given(stack_files())
def test_any_stack_file_is_one_line_or_loads(text: str) -> None:
    import tempfile
    import time
    from pathlib import Path as FilePath

    with tempfile.TemporaryDirectory() as tmp:
        (FilePath(tmp) / "Pulumi.x.yaml").write_text(text)
        saved, loading.PROJECT_DIR = loading.PROJECT_DIR, FilePath(tmp)
        started = time.monotonic()
        try:
            loading.load_named("x")
        except ConfigError as error:
            assert str(error).startswith("invalid stack config: ")
            assert str(error).isprintable(), str(error)
        finally:
            loading.PROJECT_DIR = saved
        assert time.monotonic() - started < 5, "a stack file took seconds to load"


# ---- the cluster contract (issue 29): outputs a serving stack reads, however hostile ----

_HOSTILE_VALUES = st.one_of(
    st.sampled_from(
        [
            *["0.0.0.0/0", "banana", "../../Evil NS", "kube-system", "us central1", "", "1:30", "x" * 300],
            *["10.0.0.0/8", "istio", "gke-l7-rilb", "-5", "1e30", "H100", "docker.io/../x", "a\nb", "\uff14"],
            "registry.k8s.io",
        ]
    ),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.sampled_from(["docker.io", "evil.example.com", ""]), max_size=3),
    st.dictionaries(st.sampled_from(["a", "bad key!", "llm-d.ai/x", "h100"]), st.sampled_from(["x", "", "gpu"])),
    st.recursive(st.just(1), lambda inner: st.lists(inner, max_size=2), max_leaves=40),
)


def _leaf_paths(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(value, dict) and value:
        return [path] + [p for k, v in value.items() for p in _leaf_paths(v, (*path, str(k)))]
    return [path]


@st.composite
def outputs_files(draw: st.DrawFn) -> dict[str, Any]:
    """The repo's cluster stack's outputs with a few values (or keys) replaced by hostile ones."""
    import copy

    data = copy.deepcopy(_described_outputs())
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from([p for p in _leaf_paths(data) if p]))
        node = data
        for key in path[:-1]:
            node = node[key]
        if draw(st.booleans()) or not isinstance(node, dict):
            node[path[-1]] = draw(_HOSTILE_VALUES)
        else:
            node[draw(st.sampled_from(["unknown", path[-1] + "x"]))] = draw(_HOSTILE_VALUES)
    return data


@functools_cache
def _described_outputs() -> dict[str, Any]:
    from stacks.config.cluster_outputs import describe

    return describe(loading.load_named("gke-cluster"), "gke-cluster").exported()


def _mutated(path: str, value: Any) -> dict[str, Any]:
    import copy

    data = copy.deepcopy(_described_outputs())
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[last] = value
    return data


@settings(settings.get_profile(PROFILE), max_examples=150)
@given(outputs_files())
@example(_mutated("gateway.proxy_subnet_cidr", "0.0.0.0/0"))
@example(_mutated("gateway.proxy_subnet_cidr", "banana"))
@example(_mutated("gateway.namespace", "../../Evil NS"))
@example(_mutated("gateway.class_name", "istio"))
@example(_mutated("mirror.region", "us central1"))
def test_any_outputs_file_is_one_line_naming_it_or_objects_the_platform_accepts(data: dict[str, Any]) -> None:
    import json
    import tempfile
    from pathlib import Path as FilePath

    with tempfile.TemporaryDirectory() as tmp:
        project = FilePath(tmp)
        for path in loading.PROJECT_DIR.glob("Pulumi*.yaml"):
            (project / path.name).write_text(path.read_text())
        (project / "o.json").write_text(json.dumps(data))
        saved = loading.PROJECT_DIR
        loading.PROJECT_DIR = project
        try:
            config = loading.load_named("qwen3-8b", ["cluster.outputs_file=o.json"])
        except ConfigError as error:
            text = str(error)
            assert text.startswith("invalid stack config: "), text
            assert text.isprintable() and len(text) < 1000, text
            return
        finally:
            loading.PROJECT_DIR = saved
    stack_plan = plan(config)
    for obj in plan_objects(stack_plan):
        check_object(obj)
        check_peers_and_references(obj)


def check_peers_and_references(obj: dict[str, Any]) -> None:
    """What the cluster's outputs reach: NetworkPolicy peers (private ranges, never the world), the HTTPRoute's
    parent (a namespace the cluster does not own), image references (their grammar)."""
    import ipaddress

    for block in _find(obj, "ipBlock"):
        network = ipaddress.ip_network(block["cidr"])
        assert network.is_private and network.prefixlen >= 8, block
    for refs in _find(obj, "parentRefs"):
        for ref in refs:
            formats.dns_label(ref["name"])
            formats.own_namespace(ref.get("namespace", "x"))
    for image in _find(obj, "image"):
        if isinstance(image, str):
            formats.image_reference(image)


# ---- stack graphs (issue 29 item 3): layers that name each other, in loops of any length ----

_GRAPH_KINDS = ("cluster naming a cluster", "serving", "cluster")


@st.composite
def stack_graphs(draw: st.DrawFn) -> dict[str, tuple[str, str]]:
    """Up to five stack files, each a cluster stack naming another as its cluster (which no valid cluster stack
    does), a serving stack naming one, or a cluster stack of its own; the repo's gke-cluster is a target too."""
    names = [f"s{i}" for i in range(draw(st.integers(min_value=1, max_value=5)))]
    return {
        name: (draw(st.sampled_from(_GRAPH_KINDS)), draw(st.sampled_from([*names, "gke-cluster", "absent"])))
        for name in names
    }


def _graph_file(kind: str, target: str) -> str:
    if kind == "cluster":
        return (FILE_ROOT / "Pulumi.gke-cluster.yaml").read_text()
    layer = "  llmd:layer: cluster\n" if kind == "cluster naming a cluster" else "  llmd:namespace: n\n"
    return f"config:\n{layer}  llmd:cluster:\n    provider: stack\n    stack: organization/llmd/{target}\n"


def _expected_cycle(graph: dict[str, tuple[str, str]], start: str) -> list[str] | None:
    """The loop `load_named(start)` walks into, following each stack's cluster.stack through cluster stacks."""

    def is_cluster(name: str) -> bool:
        return name == "gke-cluster" or (name in graph and graph[name][0] != "serving")

    chain, current = [start], start
    while current in graph and graph[current][0] != "cluster":
        target = graph[current][1]
        if not is_cluster(target):
            return None  # refused first: not a cluster stack (or no such file)
        if target in chain:
            return [*chain[chain.index(target) :], target]
        chain.append(target)
        current = target
    return None


FILE_ROOT = loading.PROJECT_DIR


@settings(settings.get_profile(PROFILE), max_examples=60)
@given(stack_graphs())
@example({"s0": ("cluster naming a cluster", "s0")})
@example({"s0": ("serving", "s1"), "s1": ("cluster naming a cluster", "s2"), "s2": ("cluster naming a cluster", "s1")})
def test_any_stack_graph_loads_or_is_one_line_and_a_loop_names_its_stacks_in_order(
    graph: dict[str, tuple[str, str]],
) -> None:
    import tempfile
    import time
    from pathlib import Path as FilePath

    with tempfile.TemporaryDirectory() as tmp:
        project = FilePath(tmp)
        for path in FILE_ROOT.glob("Pulumi*.yaml"):
            (project / path.name).write_text(path.read_text())
        for name, (kind, target) in graph.items():
            (project / f"Pulumi.{name}.yaml").write_text(_graph_file(kind, target))
        saved, loading.PROJECT_DIR = loading.PROJECT_DIR, project
        try:
            for name in graph:
                started = time.monotonic()
                try:
                    loading.load_named(name)
                    text = None
                except ConfigError as error:
                    text = str(error)
                    assert text.startswith("invalid stack config: ") and text.isprintable(), text
                assert time.monotonic() - started < 5, f"{name} took seconds to load"
                assert loading._LOADING == []
                loop = _expected_cycle(graph, name)
                if loop is not None:
                    assert text is not None and f"form a cycle ({' -> '.join(loop)})" in text, (name, text)
                else:
                    assert text is None or "form a cycle" not in text, (name, text)
        finally:
            loading.PROJECT_DIR = saved


# ---- files that are not files (issue 29 item 2): as a stack file and as a recorded outputs file ----

FILE_KINDS = (
    "fifo",
    "outside link",
    "dev-zero link",
    "directory",
    "deep json",
    "link loop",
    "dangling",
    "huge",
    "good",
)


def _make(kind: str, path: Any, project: Any) -> None:
    import json

    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "outside link":
        path.symlink_to("/etc/hostname")
    elif kind == "dev-zero link":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "deep json":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "link loop":
        path.symlink_to(path.name)
    elif kind == "dangling":
        path.symlink_to(project / "nowhere")
    elif kind == "huge":
        path.write_text(" " * (2 * 1024 * 1024))
    else:
        path.write_text(json.dumps(_described_outputs()) if path.suffix == ".json" else _GOOD_FILE)


class _HungError(Exception):
    pass


@settings(settings.get_profile(PROFILE), max_examples=40)
@given(st.sampled_from(FILE_KINDS), st.sampled_from(["stack file", "outputs file"]), st.integers(0, 2))
def test_a_file_of_any_kind_is_read_or_refused_in_one_line_without_hanging(kind: str, role: str, depth: int) -> None:
    """`depth`: the file sits that many directories down in the project (a stack file there is reached
    through a link from `Pulumi.x.yaml`)."""
    import signal
    import tempfile
    from pathlib import Path as FilePath

    def hung(signum: int, frame: Any) -> None:
        raise _HungError

    with tempfile.TemporaryDirectory() as tmp:
        project = FilePath(tmp)
        for path in FILE_ROOT.glob("Pulumi*.yaml"):
            (project / path.name).write_text(path.read_text())
        sub = project.joinpath(*[f"d{i}" for i in range(depth)])
        sub.mkdir(parents=True, exist_ok=True)
        if role == "stack file":
            if depth:
                _make(kind, sub / "x.yaml", project)
                (project / "Pulumi.x.yaml").symlink_to(sub / "x.yaml")
            else:
                _make(kind, project / "Pulumi.x.yaml", project)
            name, overrides = "x", []
        else:
            target = sub / "o.json"
            _make(kind, target, project)
            name, overrides = "qwen3-8b", [f"cluster.outputs_file={target.relative_to(project)}"]
        saved, loading.PROJECT_DIR = loading.PROJECT_DIR, project
        previous = signal.signal(signal.SIGALRM, hung)
        signal.alarm(10)
        try:
            loading.load_named(name, overrides)
            assert kind == "good", f"{kind} {role} was read"
        except ConfigError as error:
            text = str(error)
            assert text.startswith("invalid stack config: ") and text.isprintable() and len(text) < 1000, text
            assert kind != "good", text
        except _HungError:
            pytest.fail(f"a {kind} as the {role} hung the load")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
            loading.PROJECT_DIR = saved


# ---- the tools' arguments (issue 29 item 4): checked before anything is built, deployed or rendered ----

_E2E_NAMES = ["dev", "existing-mi300", "gke-h100-lustre", "eks-h100-efs", "qwen3-8b", "gke-cluster", "layers"]
_E2E_NAMES += ["../../etc", "", "no-such-preset", "dev\n"]
_E2E_SETS = ["cache.replicas=2", "cache.replicas=1:30", "nonsense", "router.release=UPPER", "cache.tier.cpu=1TiB"]
_E2E_WORKDIRS = ["/etc/hostname", "/", "~", ".", "out/e2e", "out", "/tmp/e2e-fuzz", "tests"]


@functools_cache
def _local_e2e_presets() -> list[str]:
    import e2e.__main__ as e2e_main

    return list(e2e_main._local_presets())


class _WouldBuildError(Exception):
    pass


@st.composite
def e2e_arguments(draw: st.DrawFn) -> list[str]:
    argv = draw(st.lists(st.sampled_from(_E2E_NAMES), max_size=3))
    flags = ("--all", "--layers", "--no-changes", "--build-only", "--keep")
    for flag in flags:
        if draw(st.booleans()) and draw(st.booleans()):
            argv.append(flag)
    for value in draw(st.lists(st.sampled_from(_E2E_SETS), max_size=2)):
        argv += ["--set", value]
    if draw(st.booleans()):
        argv += ["--stop", draw(st.sampled_from(_E2E_NAMES))]
    if draw(st.booleans()):
        argv += ["--workdir", draw(st.sampled_from(_E2E_WORKDIRS))]
    return argv


@settings(settings.get_profile(PROFILE), max_examples=15)
@given(argv=e2e_arguments())
@example(argv=["no-such-preset"])
@example(argv=["--layers", "--set", "cache.replicas=2"])
@example(argv=["--workdir", "/etc/hostname", "dev"])
def test_e2e_arguments_are_refused_in_one_line_before_any_build(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tools' build is the first thing `./run e2e` does once its arguments pass: stubbed here to stop the
    run, so an argument list either ends in one line (exit 2) or reaches it with arguments `refusal` allows."""
    import e2e.__main__ as e2e_main

    def build(**_: Any) -> None:
        raise _WouldBuildError

    local = _local_e2e_presets()  # read once, before it stands in for the module's own
    monkeypatch.setattr("e2e.tools.ensure_all", build)
    monkeypatch.setattr(e2e_main, "_local_presets", lambda: local)
    try:
        code = e2e_main.main(argv)
    except _WouldBuildError:
        named = [a for a in argv if not a.startswith("--")]
        values = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--set", "--stop", "--workdir")}
        assert all(n in local or n in values for n in named), argv
        return
    except SystemExit as exit_:  # argparse's own usage line
        assert exit_.code == 2, argv
        return
    finally:
        capsys.readouterr()
    assert code == 2, argv


_REVISIONS = ["HEAD", "HEAD~1", "-x", "--output=/tmp/x", "../../etc", "", "no-such-rev", "HEAD:tests", "HEAD^{tree}"]
_DIFF_NAMES = ["dev", "gke-cluster", "no-such", "../../etc", ""]


class _WouldRenderError(Exception):
    pass


@settings(settings.get_profile(PROFILE), max_examples=25)
@given(
    base=st.sampled_from(_REVISIONS),
    head=st.one_of(st.none(), st.sampled_from(_REVISIONS)),
    names=st.lists(st.sampled_from(_DIFF_NAMES), max_size=2),
)
def test_diff_arguments_are_refused_in_one_line_before_any_render(
    base: str, head: str | None, names: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`diff` renders (runs a revision's code) only once both revisions extract safely and every name is known."""
    from stacks import __main__ as stacks_main
    from stacks.review import diff

    def render_all(*_: Any) -> None:
        raise _WouldRenderError

    monkeypatch.setattr(diff, "_render_all", render_all)
    capsys.readouterr()  # what an earlier example printed
    argv = ["diff", "--base", base, *(["--head", head] if head is not None else []), "--", *names]
    try:
        code = stacks_main.main(argv)
    except _WouldRenderError:
        assert all(n in {"dev", "gke-cluster"} for n in names), argv
        trees = ("HEAD", "HEAD~1", "HEAD^{tree}", "HEAD:tests")
        assert base in trees and head in (None, *trees), argv
        return
    except SystemExit as exit_:
        assert exit_.code == 2, argv
        return
    err = capsys.readouterr().err
    assert code == 2, argv
    assert err.startswith("error: ") and err.count("\n") == 1, err
