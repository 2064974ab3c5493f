"""Config loading: precedence, and one clear line for every bad input."""

import pytest

from components.units import ByteSize, GiB
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan


def test_precedence_preset_then_pulumi_config_then_set() -> None:
    config = loading.build("dev", {"cache": {"replicas": 3, "tier": {"cpu": "2GiB"}}}, ["cache.replicas=4"])
    assert config.cache.replicas == 4  # --set wins over Pulumi config
    assert config.cache.tier.cpu == ByteSize(2 * GiB)  # Pulumi config wins over the preset
    assert config.cache.model == "Qwen/Qwen3-0.6B"  # the preset's value where nobody overrides it


def test_defaults_are_the_seed_default_deployment() -> None:
    config = loading.build()
    assert (config.cache.accelerator, config.cache.server, config.cache.connector, config.cache.tier.variant) == (
        "gpu",
        "vllm",
        "native",
        "cpu",
    )
    stack_plan = plan(config)
    assert (stack_plan.model_server.replicas, stack_plan.model_server.tensor_parallelism) == (2, 2)
    assert stack_plan.sizing.cpu_tier_per_pod == ByteSize(300 * GiB)


def test_config_is_frozen() -> None:
    config = loading.build()
    with pytest.raises(Exception, match="frozen"):
        config.cache.replicas = 5  # type: ignore[misc]


def test_pulumi_keys_are_namespaced_and_checked() -> None:
    preset, sections = loading.pulumi_sections(
        {"llmd:preset": "dev", "llmd:cache": {"replicas": 2}, "llmd:hfToken": "x", "kubernetes:context": "c"}
    )
    assert preset == "dev"
    assert sections == {"cache": {"replicas": 2}}
    with pytest.raises(ConfigError, match=r"llmd:caches = .*unknown key; allowed: preset, hfToken"):
        loading.pulumi_sections({"llmd:caches": {}})


BAD_INPUTS = [
    (["cache.replicas=banana"], "cache.replicas = 'banana': input should be a valid integer"),
    (["cache.replicas=0"], "cache.replicas = 0: input should be greater than or equal to 1"),
    (["cache.replica=2"], "cache.replica = (not shown): unknown key; allowed keys: accelerator, server"),
    (["cache.tier.cpu=lots"], "cache.tier.cpu = 'lots': 'lots' is not a size"),
    (["cache.tier.cpu=512MiB"], "cache.tier.cpu = '512MiB': must be between 1 GiB and 32 TiB"),
    (["cache.tier.variant=disk"], "cache.tier.variant = 'disk': input should be 'cpu' or 'fs'"),
    (["cache.model=Llama"], "cache.model = 'Llama': allowed: Qwen/Qwen3-0.6B"),
    (
        ["cache.accelerator=gaudi3"],
        "cache.accelerator = 'gaudi3': allowed: a100, amd, gpu, h200, tpu-v5p, tpu-v6, tpu-v7, xpu",
    ),
    (["cache.server=trtllm"], "cache.server = 'trtllm': input should be 'vllm' or 'sglang'"),
    # Combinations the seed's tables leave out, rejected at the first field that breaks them.
    (
        ["cache.accelerator=tpu-v6", "cache.server=sglang"],
        "cache.server = 'sglang': not supported with accelerator tpu-v6; allowed: vllm",
    ),
    (["cache.accelerator=amd", "cache.server=sglang"], "cache.server = 'sglang': not supported with accelerator amd"),
    (
        ["cache.accelerator=amd", "cache.connector=mooncake-store"],
        "cache.connector = 'mooncake-store': not supported with accelerator amd, server vllm;"
        " allowed: lmcache-connector, native",
    ),
    (["cache.server=sglang", "cache.connector=lmcache-connector"], "allowed: native"),
    (
        ["cache.accelerator=tpu-v7", "cache.tier.variant=fs"],
        "cache.tier.variant = 'fs': not supported with accelerator tpu-v7, server vllm, connector native; allowed: cpu",
    ),
    (["cache.host_type=multi-host"], "cache.host_type = 'multi-host': not supported with accelerator gpu"),
    (["cache.accelerator=tpu-v6", "cache.host_type=multi-host"], "allowed: single-host"),
    (["cache.accelerator=tpu-v6"], "cluster.platform = 'base': not supported for tpu-v6/vllm/native/cpu; allowed: gke"),
    (["cache.accelerator=xpu", "cluster.platform=gke"], "cluster.platform = 'gke': not supported"),
    (["cache.tier.disk=1TiB"], "cache.tier.disk = '1 TiB': only lmcache-connector and mooncake-store"),
    (
        ["cache.connector=mooncake-store", "cache.tier.cpu=100GB"],
        "cache.tier.cpu = '100 GB': Mooncake segments are whole GiB per rank: use a multiple of 2 GiB",
    ),
    (["cluster.platform=eks"], "cluster.platform = 'eks': input should be 'base', 'gke' or 'amd-ci'"),
    (["cache.tensor_parallelism=3"], "cache.tensor_parallelism = 3: must divide the 64 attention heads"),
    (["cache.node_pool=h100"], "cache.node_pool = 'h100': allowed: none are described"),
    (["namespace=Bad_NS"], "namespace = 'Bad_NS': must be a DNS label"),
    (["router.release=UPPER"], "router.release = 'UPPER': must start with a letter, then lower-case letters"),
    (["router.version=latest"], "router.version = 'latest': string should match pattern"),
    (["router.epp_resources.cpu=lots"], "router.epp_resources.cpu = 'lots': must be a CPU quantity"),
    (["monitoring.provider=datadog"], "monitoring.provider = 'datadog': input should be 'prometheus-operator'"),
    (["node_pools.a.taints=[{key: k, effect: Never}]"], "node_pools.a.taints[0].effect = 'Never'"),
    (["node_pools.a.colour=blue"], "node_pools.a.colour = (not shown): unknown key; allowed keys: machine_type"),
    (["cache"], "--set = 'cache': expected path=value"),
    (["cache.accelerator.x=1"], "cache.accelerator = 'gpu': is a value, not a mapping"),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_INPUTS)
def test_bad_input_gives_one_line_naming_field_value_and_allowed(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        loading.load_preset("gpu-vllm-native-cpu", overrides)
    text = str(caught.value)
    assert "\n" not in text
    assert message in text


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(
        ConfigError, match=r"preset = 'nope': allowed: amd-vllm-lmcache-connector-cpu, .*, dev, eks-h100-efs, "
    ):
        loading.load_preset("nope")


def test_unknown_name_lists_presets_and_stacks() -> None:
    with pytest.raises(ConfigError, match=r"NAME = 'nope': allowed: presets .*; stacks dev"):
        loading.load_named("nope")


def test_dev_stack_file_loads_its_preset() -> None:
    config = loading.load_named("dev")
    assert config.cache.model == "Qwen/Qwen3-0.6B"
    assert config.cache.replicas == 1


def test_node_pool_scheduling() -> None:
    config = loading.build(
        "gpu-vllm-native-cpu",
        {
            "node_pools": {
                "h100": {
                    "labels": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
                    "taints": [{"key": "nvidia.com/gpu", "value": "present"}],
                }
            },
            "cache": {"node_pool": "h100"},
        },
    )
    assert config.node_pools["h100"].taints[0].effect == "NoSchedule"


def test_empty_preset_means_the_defaults() -> None:
    preset, sections = loading.pulumi_sections({"llmd:preset": ""})
    assert loading.build(preset, sections) == loading.build()
