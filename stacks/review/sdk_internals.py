"""Every private or internal Pulumi SDK name the offline recorder (stacks/review/offline.py) relies on, in one place.

The recorder runs the real program under the SDK's mock engine and reads each raw registration, which
the SDK's public mocks API (`pulumi.runtime.Mocks`, `set_mocks`, `test`) does not expose. It needs, from
the SDK pinned in requirements.txt (pulumi==3.272.0):

- `pulumi.runtime.mocks.MockMonitor`: the mock resource monitor, subclassed to see each raw
  `RegisterResource` request (not exported by `pulumi.runtime`); its `RegisterResource` method is
  overridden and called through `super()`; its `get_registered_transforms()` gives the stack's resource
  transforms, which the mock monitor records but (unlike the engine) does not run, so the recorder runs them.
- `pulumi.runtime.mocks._resolve_callbacks`: private; maps a registration's transform callbacks back
  to the Python functions (through `_CallbackServicer._servicers` and each servicer's `_transforms`),
  so resources.json can record the transforms by function name.
- `pulumi.runtime.settings.ROOT`: the context variable holding the root Stack resource; reset before
  each run so every render starts a fresh stack in the same process.
- `pulumi.runtime.rpc.deserialize_properties`, `rpc.is_rpc_secret`, `rpc.unwrap_rpc_secret`: the
  SDK's wire (de)serialisation, to read a request's inputs and keep secrets masked.
- `pulumi.runtime.proto.resource_pb2.RegisterResourceRequest`: the fields of the raw request read in
  `REGISTRATION_FIELDS` (and `customTimeouts`' create/update/delete).
- `pulumi.runtime.set_mocks(..., monitor=...)`: the keyword that lets a custom monitor replace the
  default one.

tests/test_sdk_internals.py checks each of these against the installed SDK and fails naming the one
that is gone (and the pinned version), and that no other module of the program imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pulumi.runtime import rpc, settings
from pulumi.runtime.mocks import MockMonitor, _resolve_callbacks

PINNED_SDK = "pulumi==3.272.0"  # must equal requirements.txt (a test checks it)

# (module, attribute) for every name above, as tests/test_sdk_internals.py checks them.
RELIED_ON: tuple[tuple[str, str], ...] = (
    ("pulumi.runtime.mocks", "MockMonitor"),
    ("pulumi.runtime.mocks", "_resolve_callbacks"),
    ("pulumi.runtime.mocks", "_CallbackServicer"),
    ("pulumi.runtime.settings", "ROOT"),
    ("pulumi.runtime.rpc", "deserialize_properties"),
    ("pulumi.runtime.rpc", "is_rpc_secret"),
    ("pulumi.runtime.rpc", "unwrap_rpc_secret"),
    ("pulumi.runtime.proto.resource_pb2", "RegisterResourceRequest"),
)
# The fields of a RegisterResourceRequest the recorder reads.
REGISTRATION_FIELDS = (
    "type", "name", "parent", "dependencies", "provider", "custom", "remote", "object", "protect",
    "retainOnDelete", "deleteBeforeReplace", "customTimeouts", "replaceOnChanges", "ignoreChanges", "transforms",
)  # fmt: skip
TIMEOUT_FIELDS = ("create", "update", "delete")

__all__ = [
    "PINNED_SDK",
    "REGISTRATION_FIELDS",
    "RELIED_ON",
    "TIMEOUT_FIELDS",
    "MockMonitor",
    "deserialize_inputs",
    "is_secret",
    "reset_root_stack",
    "transform_functions",
    "unwrap_secret",
]


def transform_functions(callbacks: Any) -> list[Callable[..., Any]]:
    """The Python functions behind a registration's `transforms` callbacks."""
    return list(_resolve_callbacks(callbacks))


def reset_root_stack() -> None:
    """Forget the previous run's root Stack, so the next run registers a fresh one."""
    settings.ROOT.set(None)


def deserialize_inputs(request: Any) -> Any:
    """A raw registration's inputs, unknowns kept."""
    return rpc.deserialize_properties(request.object, keep_unknowns=True)


def is_secret(value: Any) -> bool:
    return bool(rpc.is_rpc_secret(value))


def unwrap_secret(value: Any) -> Any:
    return rpc.unwrap_rpc_secret(value)
