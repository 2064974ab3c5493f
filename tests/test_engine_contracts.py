"""Every rendered engine command line, env var and config file, against the engines' own contracts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stacks.config import loading
from tests import engine_contracts
from tests.engine_contracts import Invocation, invocations, problems
from tests.helpers import manifests, pods, rendered

VERIFY_SCRIPT = Path(__file__).resolve().parents[1] / "components" / "verification" / "verify_offload.py"

PRESETS = loading.preset_names()


def _invocations(name: str) -> list[Invocation]:
    objects = manifests(rendered(name))
    return invocations(objects, pods(objects))


@pytest.mark.parametrize("name", PRESETS)
def test_every_engine_invocation_is_one_the_engine_accepts(name: str) -> None:
    found = _invocations(name)
    assert {i.engine for i in found} & {"vllm", "sglang"}, "no model server found"
    report = {i.where: problems(i) for i in found}
    assert {where: p for where, p in report.items() if p} == {}


def test_a_flag_prefix_is_reported_not_expanded() -> None:
    flags = engine_contracts.contract("vllm")["serve_flags"]
    [problem] = engine_contracts.argv_problems(flags, ["--max-num-seq=1024"], positionals=1)
    assert "not an exact flag" in problem and "--max-num-seqs" in problem
    assert engine_contracts.argv_problems(flags, ["--max-num-seqs=many"], positionals=1)
    assert engine_contracts.argv_problems(flags, ["--enable-prefix-caching=true"], positionals=1)


def test_a_string_where_the_engine_expects_a_boolean_is_reported() -> None:
    invocation = Invocation("x", "vllm", [], {"LMCACHE_EXTRA_CONFIG": '{"use_odirect": "True"}'})
    assert engine_contracts.env_problems(invocation) == ["LMCACHE_EXTRA_CONFIG.use_odirect='True': not bool"]


def test_the_invocations_are_found_in_scripts_and_with_expanded_variables() -> None:
    [leader] = [i for i in _invocations("gke-tpu-v7-multi-host") if i.where.endswith("/leader/modelserver")]
    assert leader.engine == "vllm" and "--kv-transfer-config" in leader.args
    assert leader.env["VLLM_DISABLE_SHARED_EXPERTS_STREAM"] == "1"  # `exec env X=1 vllm serve ...`
    served = [i for i in _invocations("gpu-vllm-lmcache-server-pd") if i.engine == "vllm"]
    assert len(served) == 2
    for server in served:  # --kv-transfer-config $(LMCACHE_KV_CONFIG), from the connection ConfigMap
        assert "LMCACHE_KV_CONFIG" in server.carriers and '"MultiConnector"' in server.args[-1]
    engines = {i.engine for i in _invocations("gpu-vllm-mooncake-store-fs")}
    assert engines == {"vllm", "mooncake-master", "mooncake-client"}


def test_unknown_env_names_and_connector_keys_are_reported() -> None:
    invocation = Invocation("x", "sglang", [], {"SGLANG_NOT_A_SETTING": "1", "UNRELATED": "x"})
    assert engine_contracts.env_problems(invocation) == ["env SGLANG_NOT_A_SETTING: never read"]
    config = {
        "kv_connector": "OffloadingConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"cpu_bytes": 1},
    }
    assert engine_contracts.kv_transfer_problems(config) == [
        "OffloadingConnector.kv_connector_extra_config.cpu_bytes: never read"
    ]
    mp = {"kv_connector": "LMCacheMPConnector", "kv_connector_extra_config": {"lmcache.mp.port": "5555"}}
    assert engine_contracts.kv_transfer_problems(mp) == [
        "LMCacheMPConnector.kv_connector_extra_config.lmcache.mp.port='5555': not int"
    ]


# Where the stack reads vLLM's metrics by name: alert rules, dashboard, the verification script.
MONITORED = ("monitoring.enabled=true", "monitoring.provider=prometheus-operator", "monitoring.dashboard=true")
# An engine's metric name (not an image tag such as `lmsysorg/sglang:v0.5.16.0`).
ENGINE_METRIC = re.compile(r"(?<![\w/.-])(vllm|sglang|lmcache):[a-z][a-z0-9_]*")
_defined = engine_contracts.metric_defined


def test_every_engine_metric_the_stack_reads_is_one_the_pinned_engine_defines() -> None:
    """A renamed metric would leave its alert silent forever: the names are checked against the ones the
    pinned wheels spell (fixtures/upstream/engines/<engine>-metrics-<version>.json, engines/metrics.py)."""
    metrics = {engine: engine_contracts.engine_metrics(engine) for engine in engine_contracts.METRIC_VERSIONS}
    texts = [VERIFY_SCRIPT.read_text(), *(rendered(name, MONITORED).manifests for name in loading.preset_names())]
    read = {m.group(0) for text in texts for m in ENGINE_METRIC.finditer(text)}
    assert {"vllm:kv_offload_load_bytes_total", "sglang:load_back_tokens_total", "lmcache:retrieve_hit_rate"} <= read
    undefined = sorted(n for n in read if not _defined(n, metrics[n.split(":", 1)[0]]))
    assert undefined == []


def test_a_metric_vllm_does_not_define_is_reported() -> None:
    metrics = {"vllm:kv_offload_load_bytes": ["m"]}
    assert _defined("vllm:kv_offload_load_bytes_total", metrics)
    assert not _defined("vllm:kv_offload_load_byte_total", metrics)
    assert not _defined("vllm:kv_offload_load_bytes_bytes", metrics)


def test_an_image_is_checked_against_its_own_version_s_parser() -> None:
    """The precise path runs vLLM v0.27.1 (versions.VLLM_PRECISE_VERSION): its invocations are read with that
    version's own contract, the others with the pinned v0.26.0's; a flag v0.27.1 dropped is an error there only."""
    [precise] = [i for i in _invocations("gpu-vllm-native-cpu-precise") if i.engine == "vllm"]
    [pinned] = [i for i in _invocations("gpu-vllm-native-cpu") if i.engine == "vllm"]
    assert (precise.version, pinned.version) == ("0.27.1", "0.26.0")
    assert "--kv-events-config" in precise.args and engine_contracts.problems(precise) == []
    gone = ["--max-num-partial-prefills=2"]  # in v0.26.0's parser, not in v0.27.1's
    assert engine_contracts.argv_problems(engine_contracts.contract("vllm")["serve_flags"], gone, 0) == []
    assert engine_contracts.argv_problems(engine_contracts.contract("vllm", "0.27.1")["serve_flags"], gone, 0) == [
        "--max-num-partial-prefills: not an exact flag"
    ]
