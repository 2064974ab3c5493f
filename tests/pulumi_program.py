"""The Pulumi program (`__main__.py`'s `run`) under the SDK's mock engine, with a stack's `llmd:` config."""

from __future__ import annotations

import asyncio
from typing import Any

import pulumi
from pulumi.runtime import settings
from pulumi.runtime.config import set_all_config

from stacks.deploy.program import run


class RecordingMocks(pulumi.runtime.Mocks):
    """Records every resource registration; invokes return nothing."""

    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


def run_program(config: dict[str, str], secret_keys: list[str], stack: str = "test") -> RecordingMocks:
    """Run the program once with this config (`secret_keys` as `pulumi config set --secret` marks them)."""
    asyncio.set_event_loop(asyncio.new_event_loop())
    settings.ROOT.set(None)
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="llmd", stack=stack, preview=False)
    set_all_config(config, secret_keys)
    try:
        pulumi.runtime.test(run)()  # type: ignore[no-untyped-call]
    finally:
        set_all_config({}, [])
    return mocks
