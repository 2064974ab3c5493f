"""Pulumi entry point: `pulumi up` runs this. All logic lives in `stacks/` and `components/`."""

from stacks.deploy.program import run

run()
