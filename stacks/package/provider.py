"""The package's provider: Pulumi's component provider for `ServingStack`, its schema inferred from the Args, with
a bad input reported as the input it is.

`ComponentProvider.construct` wraps whatever a component's `__init__` raises in a `ComponentInitError`, which the
engine prints with a Python traceback; an `InputError` (the stack config's one line, in the consumer's property
names) goes back as an `InputPropertyError` on that property instead, which the engine prints as one line.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.provider import ConstructResult
from pulumi.provider.server import ComponentInitError

from stacks.package.input_shape import refusal
from stacks.package.inputs import InputError
from stacks.package.serving_stack import PACKAGE, ServingStack

COMPONENTS: list[type[pulumi.ComponentResource]] = [ServingStack]
VERSION = "0.1.0"  # the package's own version, in its schema


class ServingStackProvider(ComponentProvider):
    def __init__(self) -> None:
        super().__init__(COMPONENTS, PACKAGE, version=VERSION)
        assert self.schema is not None, "a component provider always carries its inferred schema"
        self.schema_doc: dict[str, Any] = json.loads(self.schema)

    def construct(
        self, name: str, resource_type: str, inputs: Any, options: pulumi.ResourceOptions | None = None
    ) -> ConstructResult:
        # Before the SDK maps them (it drops what the schema does not name, and converts integers unchecked).
        found = refusal(inputs if isinstance(inputs, dict) else {}, self.schema_doc)
        if found is not None:
            raise pulumi.InputPropertyError(found.path, found.reason)
        try:
            return super().construct(name, resource_type, inputs, options)
        except ComponentInitError as error:
            inner = getattr(error, "inner", None)
            if isinstance(inner, InputError):
                raise pulumi.InputPropertyError(inner.path, inner.reason) from None
            raise


def schema() -> dict[str, Any]:
    """The package's schema, as the provider gives it to the engine (`pulumi package get-schema package`)."""
    text = ServingStackProvider().schema
    assert text is not None, "a component provider always carries its inferred schema"
    return dict(json.loads(text))
