"""The Pulumi program proper: read the stack's config, plan, compose, export (run by `__main__.py`)."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env, is_config_secret

from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.deploy.compose import compose
from stacks.planning.plan import plan


def read_pulumi_config() -> dict[str, Any]:
    """Every `llmd:` key of the stack, structured values parsed; the HF token is left to `require_secret`."""
    config = pulumi.Config(loading.CONFIG_NAMESPACE)
    values: dict[str, Any] = {}
    # The language host sets CONFIG; older hosts pass the PULUMI_CONFIG environment variable.
    for full_key in sorted({*CONFIG.get(), *get_config_env()}):
        namespace, _, key = full_key.partition(":")
        if namespace != loading.CONFIG_NAMESPACE or key == loading.HF_TOKEN_KEY:
            continue
        try:
            values[full_key] = config.get_object(key)
        except pulumi.ConfigTypeError:  # a plain string that is not JSON
            values[full_key] = config.get(key)
    return values


def secret_config(values: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The sections set with `--secret` (whole, or a path in them) and the text of every value in them:
    an error never prints either."""
    sections = [key.partition(":")[2] for key in values if is_config_secret(key)]
    texts: list[str] = []

    def leaves(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                leaves(item)
        elif isinstance(value, list):
            for item in value:
                leaves(item)
        elif isinstance(value, str) and len(value) >= loading.SECRET_MIN_LENGTH:
            texts.append(value)

    for key in values:
        if is_config_secret(key):
            leaves(values[key])
    return sections, texts


def run() -> None:
    values = read_pulumi_config()
    try:
        preset, sections = loading.pulumi_sections(values)
        stack_plan = plan(loading.build(preset, sections))
    except ConfigError as error:
        raise pulumi.RunError(str(error.hiding(*secret_config(values)))) from None
    hf_token = pulumi.Config(loading.CONFIG_NAMESPACE).require_secret(loading.HF_TOKEN_KEY)
    outputs = compose(stack_plan, hf_token)
    sizing = stack_plan.sizing
    pulumi.export("namespace", outputs.namespace)
    pulumi.export("routerEndpoint", outputs.router_endpoint)
    pulumi.export("metricsToWatch", stack_plan.metrics_to_watch)
    if outputs.kubeconfig is not None:
        pulumi.export("kubeconfig", outputs.kubeconfig)  # a secret
    pulumi.export(
        "cacheSizing",
        {
            "cpuTierPerPod": sizing.cpu_tier_per_pod.human(),
            "lruCapacityPerServer": sizing.lru_capacity_per_server,
            "podMemory": sizing.pod_memory.quantity(),
            **({"shmSizeLimit": sizing.shm_size_limit.quantity()} if sizing.shm_size_limit else {}),
        },
    )
