"""The offline recorder's private Pulumi SDK names: still there in the pinned SDK, and used nowhere else.

When an SDK upgrade removes or reshapes one, these tests fail naming it and the pinned version, before
the recorder fails somewhere inside a render.
"""

from __future__ import annotations

import ast
import contextvars
import importlib
import importlib.metadata
import inspect
from pathlib import Path

import pytest
from pulumi.runtime import mocks, set_mocks
from pulumi.runtime.proto import resource_pb2

from stacks.review import sdk_internals
from stacks.review.sdk_internals import PINNED_SDK, REGISTRATION_FIELDS, RELIED_ON, TIMEOUT_FIELDS

ROOT = Path(__file__).resolve().parents[1]
GONE = (
    "the offline recorder (stacks/review/sdk_internals.py) relies on {name}, which the installed SDK {installed} lacks"
)
PINNED = f"(written against {PINNED_SDK}; update stacks/review/sdk_internals.py and its docstring)"


def _installed() -> str:
    return f"pulumi=={importlib.metadata.version('pulumi')}"


def test_the_pinned_sdk_is_the_one_requirements_txt_installs() -> None:
    pins = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert PINNED_SDK in pins, f"requirements.txt no longer pins {PINNED_SDK}: re-check every name in {RELIED_ON}"
    assert _installed() == PINNED_SDK, f"{_installed()} is installed, {PINNED}: re-check every name in RELIED_ON"


@pytest.mark.parametrize(("module", "attribute"), RELIED_ON, ids=[f"{m}.{a}" for m, a in RELIED_ON])
def test_each_private_name_is_still_provided(module: str, attribute: str) -> None:
    name = f"{module}.{attribute}"
    try:
        found = importlib.import_module(module)
    except ImportError:
        pytest.fail(f"{GONE.format(name=module, installed=_installed())} {PINNED}")
    assert hasattr(found, attribute), f"{GONE.format(name=name, installed=_installed())} {PINNED}"


def test_the_mock_monitor_is_a_class_with_register_resource() -> None:
    name = "pulumi.runtime.mocks.MockMonitor.RegisterResource"
    assert inspect.isclass(mocks.MockMonitor), f"{GONE.format(name='a MockMonitor class', installed=_installed())}"
    assert callable(getattr(mocks.MockMonitor, "RegisterResource", None)), (
        f"{GONE.format(name=name, installed=_installed())} {PINNED}"
    )
    registered = "pulumi.runtime.mocks.MockMonitor.get_registered_transforms"
    assert callable(getattr(mocks.MockMonitor, "get_registered_transforms", None)), (
        f"{GONE.format(name=registered, installed=_installed())} {PINNED}"
    )


def test_resolve_callbacks_reads_the_servicers_transforms() -> None:
    """`_resolve_callbacks(callbacks)` walks `_CallbackServicer._servicers` and each one's `_transforms`."""
    params = list(inspect.signature(mocks._resolve_callbacks).parameters)
    assert params == ["callbacks"], f"pulumi.runtime.mocks._resolve_callbacks now takes {params} {PINNED}"
    servicer = getattr(mocks, "_CallbackServicer")  # noqa: B009 (private: mypy sees no export)
    servicers = getattr(servicer, "_servicers", None)
    assert isinstance(servicers, list | set | tuple), (
        f"{GONE.format(name='pulumi.runtime.mocks._CallbackServicer._servicers', installed=_installed())} {PINNED}"
    )
    assert "_transforms" in inspect.getsource(servicer), (
        f"{GONE.format(name='_CallbackServicer._transforms', installed=_installed())} {PINNED}"
    )
    assert sdk_internals.transform_functions([]) == []


def test_the_root_stack_is_a_context_variable() -> None:
    from pulumi.runtime import settings

    assert isinstance(settings.ROOT, contextvars.ContextVar), (
        f"pulumi.runtime.settings.ROOT is no longer a ContextVar in {_installed()} {PINNED}"
    )


def test_set_mocks_takes_a_monitor() -> None:
    assert "monitor" in inspect.signature(set_mocks).parameters, (
        f"{GONE.format(name='set_mocks(monitor=...)', installed=_installed())} {PINNED}"
    )


@pytest.mark.parametrize("field", REGISTRATION_FIELDS)
def test_each_registration_field_the_recorder_reads_exists(field: str) -> None:
    fields = resource_pb2.RegisterResourceRequest.DESCRIPTOR.fields_by_name
    assert field in fields, f"{GONE.format(name=f'RegisterResourceRequest.{field}', installed=_installed())} {PINNED}"


def test_the_custom_timeouts_fields_exist() -> None:
    timeouts = resource_pb2.RegisterResourceRequest.CustomTimeouts.DESCRIPTOR.fields_by_name
    for field in TIMEOUT_FIELDS:
        assert field in timeouts, f"{GONE.format(name=f'CustomTimeouts.{field}', installed=_installed())} {PINNED}"


INTERNAL = ("pulumi.runtime.mocks", "pulumi.runtime.rpc", "pulumi.runtime.settings", "pulumi.runtime.proto")


def _private_imports(path: Path) -> set[str]:
    """The SDK-internal modules a file imports (`from pulumi.runtime.rpc import x`, `from pulumi.runtime import rpc`)"""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out |= {n for n in names if n.startswith(INTERNAL)}
    return out


def test_only_sdk_internals_imports_them() -> None:
    """Within the program (components, policies, stacks); the tests and e2e harness may use the SDK freely."""
    program = [p for top in ("components", "policies", "stacks") for p in (ROOT / top).rglob("*.py")]
    found = {str(p.relative_to(ROOT)): _private_imports(p) for p in program if p.name != "sdk_internals.py"}
    assert {path: names for path, names in found.items() if names} == {}
