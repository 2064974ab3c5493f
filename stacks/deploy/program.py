"""The Pulumi program proper: read the stack's config, plan, compose, export (run by `__main__.py`)."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env, is_config_secret

from stacks.config import loading
from stacks.config.cluster_facts import CLUSTER_OUTPUT, ClusterOutputs
from stacks.config.cluster_outputs import read_outputs
from stacks.config.errors import ConfigError
from stacks.deploy.cluster_compose import compose_cluster
from stacks.deploy.compose import compose
from stacks.planning.cluster_plan import plan_cluster
from stacks.planning.plan import plan

# The engine's builtin invoke behind StackReference (pulumi/pkg/resource/deploy/builtins.go).
READ_STACK_OUTPUTS = "pulumi:pulumi:readStackOutputs"


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


def live_cluster_outputs(name: str) -> ClusterOutputs:
    """A serving stack's cluster facts, read from the live cluster stack `name` (the engine's builtin
    `readStackOutputs`, the call a StackReference makes; only `llmdCluster` is kept, the kubeconfig comes
    through the StackReference as a secret)."""
    try:
        result = pulumi.runtime.invoke(READ_STACK_OUTPUTS, {"name": name})
    except Exception as error:  # the engine's own message: no such stack, no access
        raise ConfigError("cluster.stack", name, f"cannot read its outputs: {str(error).splitlines()[0]}") from None
    outputs = (result.value or {}).get("outputs") or {}
    if CLUSTER_OUTPUT not in outputs:
        raise ConfigError("cluster.stack", name, f"exports no {CLUSTER_OUTPUT}: `pulumi up` the cluster stack first")
    return read_outputs(outputs[CLUSTER_OUTPUT], name)


def check_token_is_secret() -> None:
    """The HF token, when set, is set with `--secret` (Pulumi.yaml leaves it undeclared: a declared key is one the
    engine requires of every stack, a cluster stack's too, which serves no model)."""
    key = f"{loading.CONFIG_NAMESPACE}:{loading.HF_TOKEN_KEY}"
    if is_config_secret(key):  # checked first: reading a secret with `get` logs a warning
        return
    if pulumi.Config(loading.CONFIG_NAMESPACE).get(loading.HF_TOKEN_KEY) is not None:
        raise pulumi.RunError(f"{key} must be a secret: set it with `pulumi config set --secret {key}`")


def run() -> None:
    values = read_pulumi_config()
    try:
        preset, sections = loading.pulumi_sections(values)
        config = loading.build(preset, sections, read_cluster=live_cluster_outputs)
        if config.effective_layer == "cluster":
            compose_cluster(plan_cluster(config, pulumi.get_stack()))
            return
        stack_plan = plan(config)
    except ConfigError as error:
        raise pulumi.RunError(str(error.hiding(*secret_config(values)))) from None
    check_token_is_secret()
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
