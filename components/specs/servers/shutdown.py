"""How a model server stops, where the stack drains it (`ServerSpec.drain`: `autoscaling.scale_in: cache-value`):
the preStop wait, the grace and vLLM's drain flag (components/formulas/drain.py says how each is derived)."""

from __future__ import annotations

from components.formulas.drain import PRE_STOP_SECONDS
from components.manifest import Container, PodSpec
from components.specs.servers.base import ServerSpec

# Without a drain: the grace of the guide's CPU-offloading patches (llm-d tiered-prefix-cache), which only bounds
# the teardown: vLLM aborts its requests on SIGTERM unless `--shutdown-timeout` is set.
TERMINATION_GRACE_SECONDS = 130


def vllm_drain_args(spec: ServerSpec) -> list[str]:
    """vLLM finishes its requests for up to this long after SIGTERM, refusing new ones (components/formulas/drain.py);
    without it vLLM aborts them at once."""
    return [f"--shutdown-timeout={spec.drain.shutdown_timeout_s}"] if spec.drain is not None else []


def drained(spec: ServerSpec, pod: PodSpec, container: Container) -> None:
    """The drain's preStop wait (the router stops picking the pod before SIGTERM reaches the engine, as llm-d's
    graceful-shutdown component does it) and the grace that covers it, the drain and the teardown."""
    if spec.drain is None:
        return
    container["lifecycle"] = {"preStop": {"exec": {"command": ["/bin/sleep", str(PRE_STOP_SECONDS)]}}}
    pod["terminationGracePeriodSeconds"] = spec.drain.grace_s
