"""Run the real program under the Pulumi SDK's mock engine and record every resource it registers.

No CLI, no cluster, no network: the mocks echo inputs back as outputs, as a provider would on create.
Remote components (the Helm chart, the CRD ConfigFile) are recorded with their inputs, not expanded.
Every private SDK name this relies on comes through stacks/review/sdk_internals.py, and only through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.catalog.cloud_resources import CLOUD_RESOURCES
from stacks.config import loading
from stacks.deploy.cluster_compose import compose_cluster
from stacks.deploy.compose import StackOutputs, compose
from stacks.planning.cluster_plan import ClusterPlan
from stacks.planning.plan import StackPlan
from stacks.review.sdk_internals import (
    TIMEOUT_FIELDS,
    MockMonitor,
    deserialize_inputs,
    is_secret,
    reset_root_stack,
    transform_functions,
    unwrap_secret,
)

PROJECT = loading.PROJECT_NAME
# The HF token an offline render uses; tests assert it never reaches any output file.
OFFLINE_HF_TOKEN = "hf_offline_render_token_never_printed"
SECRET_MARK = "[secret]"


@dataclass
class RecordedResource:
    type: str
    name: str
    parent: str | None
    depends_on: list[str]
    provider: str | None
    custom: bool
    remote: bool
    inputs: dict[str, Any]
    secret_paths: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)  # the resource options that are set


@dataclass
class Recording:
    resources: list[RecordedResource]
    outputs: dict[str, Any]


def _name_of(urn: str) -> str:
    return urn.split("::")[-1]


def _type_and_name(urn: str) -> str:
    """`<type>::<name>`: names alone are ambiguous (a Service and a Deployment may share one)."""
    parts = urn.split("::")
    return f"{parts[-2].rsplit('$', 1)[-1]}::{parts[-1]}"


def _parent_name(urn: str) -> str | None:
    """None for resources at the top of the program (their parent is the root Stack)."""
    if not urn or urn.split("::")[-2] == "pulumi:pulumi:Stack":
        return None
    return _name_of(urn)


def _options(request: Any, applied: pulumi.ResourceOptions) -> dict[str, Any]:
    """The lifecycle options of a registration, as `pulumi up` would apply them (only those set); `applied`:
    the options after the stack's transforms (see `_transformed`)."""
    timeouts = applied.custom_timeouts
    options: dict[str, Any] = {
        "protect": applied.protect,
        "retainOnDelete": request.retainOnDelete,
        "deleteBeforeReplace": request.deleteBeforeReplace,
        "customTimeouts": {k: v for k in TIMEOUT_FIELDS if timeouts and (v := getattr(timeouts, k))},
        "replaceOnChanges": sorted(request.replaceOnChanges),
        "ignoreChanges": sorted(request.ignoreChanges),
        # what rewrites the objects a component (the router chart) renders, by function name
        "transforms": [getattr(fn, "__name__", repr(fn)) for fn in transform_functions(request.transforms)],
    }
    return {k: v for k, v in options.items() if v}


def _transformed(
    request: Any, inputs: Any, transforms: list[pulumi.ResourceTransform]
) -> tuple[pulumi.ResourceOptions, Any]:
    """The engine runs the stack's resource transforms on every registration and applies the options and the
    inputs they return; the mock monitor only records them, so the recorder runs them here."""
    timeouts = request.customTimeouts
    opts = pulumi.ResourceOptions(
        protect=request.protect,
        custom_timeouts=pulumi.CustomTimeouts(**{k: getattr(timeouts, k) or None for k in TIMEOUT_FIELDS}),
    )
    for transform in transforms:
        result = transform(pulumi.ResourceTransformArgs(request.custom, request.type, request.name, inputs, opts))
        if inspect.isawaitable(result):
            raise TypeError(f"{transform.__name__}: the offline recorder runs synchronous stack transforms only")
        if result is not None:
            opts = result.opts if result.opts is not None else opts
            inputs = result.props if result.props is not None else inputs
    return opts, inputs


def _mask(value: Any) -> Any:
    """Keep a secret's shape (its keys), replace every value in it."""
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return SECRET_MARK


def _clean(value: Any, path: str, secrets: list[str]) -> Any:
    """Secrets become `[secret]` (their paths noted); whole floats (protobuf numbers) become ints."""
    if is_secret(value):
        secrets.append(path or ".")
        return _mask(unwrap_secret(value))
    if isinstance(value, dict):
        return {k: _clean(v, f"{path}.{k}" if path else k, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, f"{path}[{i}]", secrets) for i, v in enumerate(value)]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# What the providers compute on create, played by the mocks with recognisably fake values: each cloud
# resource type's `offline_outputs` (components/catalog/cloud_resources.py), and a cluster stack's reference.
_PROVIDER_OUTPUTS: dict[str, dict[str, Any]] = {
    **{t: dict(r.offline_outputs) for t, r in CLOUD_RESOURCES.items() if r.offline_outputs},
    # A serving stack's cluster stack: its kubeconfig output, a secret as the real cluster stack exports it.
    "pulumi:pulumi:StackReference": {
        "outputs": {"kubeconfig": "offline-render-cluster-stack-kubeconfig"},
        "secretOutputNames": ["kubeconfig"],
    },
}


# Invokes the program makes, answered with placeholders.
_CALL_OUTPUTS: dict[str, dict[str, Any]] = {
    "gcp:organizations/getProject:getProject": {"number": "000000000000"},
}


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        outputs = dict(args.inputs)
        outputs.setdefault("name", args.name)
        for key, value in _PROVIDER_OUTPUTS.get(args.typ, {}).items():
            if isinstance(value, dict) and isinstance(outputs.get(key), dict):
                outputs[key] = {**outputs[key], **value}
            else:
                outputs.setdefault(key, value)
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return dict(_CALL_OUTPUTS.get(args.token, {})), []


def _close_worker_loop() -> None:
    """The mock monitor runs in executor threads and opens an event loop in each, which nothing closes;
    left to the garbage collector, their finalizers fail noisily (and at exit). Close it after each
    call: the next call on the thread opens a fresh one."""
    if threading.current_thread() is threading.main_thread():
        return
    try:
        loop = asyncio.get_event_loop()
    except RuntimeError:
        return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


class _RecordingMonitor(MockMonitor):
    """MockResourceArgs lacks parent and dependencies: read them off the raw registration request."""

    def __init__(self, mocks: _Mocks) -> None:
        super().__init__(mocks)
        self.recorded: list[RecordedResource] = []
        # A resource's `transforms` run on its children too (the package's component carries the lifecycle
        # transform that way): what each registered URN passes down.
        self.passed_down: dict[str, list[pulumi.ResourceTransform]] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        try:
            response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        finally:
            _close_worker_loop()
        if request.type == "pulumi:pulumi:Stack":
            return response
        inherited = self.passed_down.get(request.parent, [])
        self.passed_down[response.urn] = inherited + transform_functions(request.transforms)
        transforms = [*self.get_registered_transforms(), *inherited]
        applied, inputs = _transformed(request, deserialize_inputs(request), transforms)
        secrets: list[str] = []
        cleaned = _clean(inputs, "", secrets)
        self.recorded.append(
            RecordedResource(
                type=request.type,
                name=request.name,
                parent=_parent_name(request.parent),
                depends_on=sorted({_type_and_name(d) for d in request.dependencies}),
                provider=_name_of(request.provider.rsplit("::", 1)[0]) if request.provider else None,
                custom=request.custom,
                remote=request.remote,
                inputs=cleaned,
                secret_paths=sorted(secrets),
                options=_options(request, applied),
            )
        )
        return response


def _ambient(name: str) -> bool:
    """Environment the Kubernetes provider reads for unset arguments (KUBECONFIG, PULUMI_K8S_*)."""
    return name == "KUBECONFIG" or name.startswith("PULUMI_K8S_")


@contextlib.contextmanager
def _without_ambient_provider_settings() -> Iterator[None]:
    """A render is the same on every machine: the provider's defaults from the caller's environment (a
    kubeconfig path, feature flags) stay out of it. Under the real engine they apply as usual."""
    saved = {k: v for k, v in os.environ.items() if _ambient(k)}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)


def record(stack_plan: StackPlan | ClusterPlan, stack: str) -> Recording:
    """Run `compose` (a cluster stack's `compose_cluster`) once under fresh mocks (a new event loop and root
    stack each time)."""
    outputs: dict[str, Any] = {}

    def program() -> pulumi.Output[Any]:
        if isinstance(stack_plan, ClusterPlan):
            compose_cluster(stack_plan)
            outputs.update(llmdCluster=stack_plan.outputs.exported())
            return pulumi.Output.from_input(None)
        result: StackOutputs = compose(stack_plan, pulumi.Output.secret(OFFLINE_HF_TOKEN))
        return pulumi.Output.all(result.namespace, result.router_endpoint).apply(
            lambda v: outputs.update(namespace=v[0], routerEndpoint=v[1])
        )

    return Recording(resources=record_program(program, stack).resources, outputs=outputs)


def record_program(program: Callable[[], Any], stack: str) -> Recording:
    """Run any program once under fresh mocks and record what it registers (`record`'s, or a component of the
    package declared as a consumer would)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    reset_root_stack()
    mocks = _Mocks()
    monitor = _RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    try:
        with _without_ambient_provider_settings():
            pulumi.runtime.test(program)()  # type: ignore[no-untyped-call]
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())  # join the monitor's worker threads
        loop.close()
    return Recording(resources=monitor.recorded, outputs={})
