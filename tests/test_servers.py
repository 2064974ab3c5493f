"""Each family's render against the upstream deployment (shared/reference/llm-d-upstream.md §5, §9, §12)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from stacks.config import loading
from tests.helpers import by_kind, manifests, pods, rendered, resources, router_chart

QWEN3_32B_100GIB = 107374182400


def _objects(name: str, *overrides: str) -> list[dict[str, Any]]:
    return manifests(rendered(name, tuple(overrides)))


def _server(name: str, *overrides: str) -> dict[str, Any]:
    return next(
        o
        for o in _objects(name, *overrides)
        if o["kind"] in ("Deployment", "LeaderWorkerSet") and o["metadata"]["namespace"] != "mooncake"
    )


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = workload["spec"]["template"]["spec"]["containers"][0]
    return container


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def _tier_dir(workload: dict[str, Any]) -> str:
    """Where the connector's files go: the namespace the workload says it writes, under the tier's mount; the
    namespace is the model and 12 hex digits (tests/test_tier_namespace.py holds its fields)."""
    namespace = workload["metadata"]["annotations"]["llm-d.ai/kv-tier-namespace"]
    assert re.fullmatch(r"Qwen3-(32|8)B-[0-9a-f]{12}", namespace), namespace
    return f"/mnt/files-storage/{namespace}"


def _kv(container: dict[str, Any]) -> dict[str, Any]:
    args = container["args"]
    config: dict[str, Any] = json.loads(args[args.index("--kv-transfer-config") + 1])
    return config


def _router(name: str) -> dict[str, Any]:
    chart = router_chart(resources(rendered(name)))
    router: dict[str, Any] = chart["inputs"]["values"]["router"]
    return router


def _capacity(name: str) -> int:
    plugins = _router(name)["epp"]["pluginsConfig"]["plugins"]
    return int(
        next(p for p in plugins if p.get("name") == "cpu-prefix-cache-producer")["parameters"]["lruCapacityPerServer"]
    )


def test_native_fs_uses_the_tiering_spec_on_the_shared_claim() -> None:
    deployment = _server("gpu-vllm-native-fs")
    container = _container(deployment)
    assert _kv(container) == {
        "kv_connector": "OffloadingConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {
            "spec_name": "TieringOffloadingSpec",
            "cpu_bytes_to_use": QWEN3_32B_100GIB,
            "block_size": 256,
            "secondary_tiers": [
                {"type": "fs", "root_dir": _tier_dir(deployment), "n_read_threads": 16, "n_write_threads": 16}
            ],
        },
    }
    assert container["env"][0] == {"name": "PYTHONHASHSEED", "value": "42"}
    assert container["securityContext"]["runAsUser"] == 0  # the guide's: it writes the shared tier
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["files-storage"]["persistentVolumeClaim"] == {"claimName": "llm-d-kv-cache-storage"}
    # The tier sees only its own directory of the claim: the model cache keeps the weights beside it.
    tier_mount = {"name": "files-storage", "mountPath": "/mnt/files-storage", "subPath": "kv-cache"}
    assert tier_mount in container["volumeMounts"]
    claim = by_kind(_objects("gpu-vllm-native-fs"), "PersistentVolumeClaim")[0]
    assert claim["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "9000Gi"}}}
    assert _capacity("gpu-vllm-native-fs") == 6400


def test_storage_class_is_configurable_and_gke_fixes_lustre_permissions() -> None:
    objects = _objects("gpu-vllm-native-fs-gke")
    assert by_kind(objects, "PersistentVolumeClaim")[0]["spec"]["storageClassName"] == "lustre-class"
    pod = _server("gpu-vllm-native-fs-gke")["spec"]["template"]["spec"]
    [init] = pod["initContainers"]
    assert init["name"] == "fix-lustre-permissions"
    assert init["command"] == ["sh", "-c", "chmod -R g+w /mnt/files-storage/"]
    env = _env(pod["containers"][0])
    assert env["NCCL_TUNER_PLUGIN"] == "none" and env["NCCL_NET_PLUGIN"] == ""
    assert "NCCL_TUNER_PLUGIN" not in _env(_container(_server("gpu-vllm-native-fs")))


def test_lmcache_connector_settings() -> None:
    container = _container(_server("gpu-vllm-lmcache-connector-cpu"))
    assert container["image"] == "docker.io/vllm/vllm-openai:v0.26.0"  # the guide's, not LMCache's image
    assert container["args"][-1] == "--max-num-seqs=1024"  # upstream: the prefix --max-num-seq
    assert _kv(container) == {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}
    env = _env(container)
    assert (env["LMCACHE_MAX_LOCAL_CPU_SIZE"], env["PYTHONHASHSEED"]) == ("100.0", "123")
    assert env["PROMETHEUS_MULTIPROC_DIR"] == "/tmp/lmcache_prometheus"
    assert _capacity("gpu-vllm-lmcache-connector-cpu") == 12800
    fs_server = _server("gpu-vllm-lmcache-connector-fs")
    fs = _env(_container(fs_server))
    assert fs["LMCACHE_LOCAL_DISK"] == f"file://{_tier_dir(fs_server)}/"
    assert fs["LMCACHE_EXTRA_CONFIG"] == '{"use_odirect":true}'  # upstream: "True", a string
    assert fs["LMCACHE_MAX_LOCAL_DISK_SIZE"] == "1120.0"


def test_mooncake_store_configs_and_services() -> None:
    objects = _objects("gpu-vllm-mooncake-store-cpu")
    config = json.loads(
        next(o for o in objects if o["metadata"]["name"] == "mooncake-store-config")["data"]["mooncake_config.json"]
    )
    assert config == {
        "mode": "embedded",
        "metadata_server": "P2PHANDSHAKE",
        "master_server_address": "mooncake-master-store.mooncake.svc.cluster.local:50051",
        "global_segment_size": "80GB",
        "local_buffer_size": "4GB",
        "protocol": "rdma",
        "device_name": "",
        "enable_offload": False,
    }
    container = _container(_server("gpu-vllm-mooncake-store-cpu"))
    assert container["resources"]["requests"]["rdma/ib"] == "1"
    assert [e["name"] for e in container["env"][:2]] == ["MOONCAKE_CONFIG_PATH", "PYTHONHASHSEED"]
    master = next(o for o in by_kind(objects, "Deployment") if o["metadata"]["namespace"] == "mooncake")
    assert master["spec"]["template"]["spec"]["containers"][0]["image"] == "ghcr.io/llm-d/mooncake-master-store:v0.8.0"
    assert not by_kind(objects, "DaemonSet")  # the embedded pool needs no client
    # One pool for all pods: 80 GiB x 2 ranks x 2 pods = 320 GiB = 20480 router blocks of 16 MiB.
    assert _capacity("gpu-vllm-mooncake-store-cpu") == 20480

    fs = _objects("gpu-vllm-mooncake-store-fs")
    config = json.loads(
        next(o for o in fs if o["metadata"]["name"] == "mooncake-store-config")["data"]["mooncake_config.json"]
    )
    assert (config["mode"], config["global_segment_size"], config["enable_offload"]) == ("standalone-store", 0, True)
    assert _kv(_container(_server("gpu-vllm-mooncake-store-fs")))["kv_connector_extra_config"] == {"load_async": True}
    [client] = by_kind(fs, "DaemonSet")
    client_container = client["spec"]["template"]["spec"]["containers"][0]
    assert "--global_segment_size=80GB" in client_container["args"]
    assert _env(client_container)["MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES"] == "1099511627776"
    assert client_container["resources"]["requests"]["memory"] == "82Gi"
    assert client_container["resources"]["limits"]["memory"] == "84Gi"
    assert client_container["resources"]["requests"]["rdma/ib"] == "1"


def test_sglang_hicache_args() -> None:
    container = _container(_server("gpu-sglang-native-cpu"))
    assert container["command"] == ["python3", "-m", "sglang.launch_server"]
    assert container["args"] == [
        "--model-path=Qwen/Qwen3-32B", "--host=0.0.0.0", "--port=8000", "--tensor-parallel-size=2", "--page-size=64",
        "--mem-fraction-static=0.9", "--enable-metrics", "--enable-hierarchical-cache",
        "--hicache-write-policy", "write_through", "--hicache-io-backend", "kernel", "--hicache-size", "200",
    ]  # fmt: skip
    fs_server = _server("gpu-sglang-native-fs")
    fs = _container(fs_server)
    assert fs["args"][-4:] == [
        "--hicache-storage-backend",
        "file",
        "--hicache-storage-prefetch-policy",
        "wait_complete",
    ]
    assert _env(fs)["SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR"] == _tier_dir(fs_server)
    assert _server("gpu-sglang-native-cpu")["metadata"]["labels"]["llm-d.ai/engine-type"] == "sglang"
    assert _capacity("gpu-sglang-native-cpu") == 23841


@pytest.mark.parametrize(
    ("name", "accelerator", "topology", "chips", "tp", "chunks"),
    [
        ("tpu-v5p-vllm-native-cpu", "tpu-v5p-slice", "2x2x1", 4, 4, "10000"),
        ("tpu-v6-vllm-native-cpu", "tpu-v6e-slice", "2x4", 8, 8, "25000"),
        ("tpu-v7-vllm-native-cpu", "tpu7x", "2x2x1", 4, 8, "25000"),
    ],
)
def test_tpu_single_host(name: str, accelerator: str, topology: str, chips: int, tp: int, chunks: str) -> None:
    deployment = _server(name)
    assert deployment["spec"]["replicas"] == 3
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": accelerator,
        "cloud.google.com/gke-tpu-topology": topology,
    }
    container = pod["containers"][0]
    assert container["resources"]["limits"]["google.com/tpu"] == str(chips)  # a quantity as the API server returns it
    assert container["args"][-2:] == ["--tensor-parallel-size", str(tp)]
    assert _kv(container)["kv_connector"] == "TPUOffloadConnector"
    env = _env(container)
    assert (env["TPU_OFFLOAD_NUM_CPU_CHUNKS"], env["TPU_OFFLOAD_NUM_STAGING_BLOCKS"]) == (chunks, "1000")
    assert pod["initContainers"][0]["securityContext"] == {"privileged": True}
    # One CPU chunk is one 128-token KV block: 2 router blocks of 64 tokens.
    assert _capacity(name) == 2 * int(chunks)


def test_tpu_v7_multi_host_routes_only_to_leaders() -> None:
    objects = _objects("tpu-v7-vllm-native-cpu-multi-host")
    [lws] = by_kind(objects, "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    assert (lws["spec"]["replicas"], template["size"]) == (3, 2)
    leader = template["leaderTemplate"]
    assert leader["metadata"]["labels"]["role"] == "leader"
    assert leader["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == "2x2x2"
    script = leader["spec"]["containers"][0]["command"][2]
    assert "--model=Qwen/Qwen3-Coder-480B-A35B-Instruct" in script and "--tensor-parallel-size 16" in script
    assert _router("tpu-v7-vllm-native-cpu-multi-host")["modelServers"]["matchLabels"] == {
        "llm-d.ai/guide": "tiered-prefix-cache",
        "leaderworkerset.sigs.k8s.io/name": "tpu-v7-vllm-decode",
        "role": "leader",
    }
    [service] = [s for s in by_kind(objects, "Service") if s["metadata"]["name"] == "tpu-v7-vllm-decode"]
    assert service["spec"]["clusterIP"] == "None"


def test_xpu_claims_devices_through_dra() -> None:
    objects = _objects("xpu-vllm-native-cpu")
    [template] = by_kind(objects, "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
    pod = _server("xpu-vllm-native-cpu")["spec"]["template"]["spec"]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": pod["resourceClaims"][0]["name"]}]
    assert not any("gpu" in k for k in pod["containers"][0]["resources"]["limits"])
    lmcache = _objects("xpu-vllm-lmcache-connector-cpu")
    assert (
        by_kind(lmcache, "ResourceClaimTemplate")[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    )
    container = _container(_server("xpu-vllm-lmcache-connector-cpu"))
    assert container["args"][0] == "Qwen/Qwen3-8B"
    assert _env(container)["LMCACHE_MAX_LOCAL_CPU_SIZE"] == "20.0"
    assert _capacity("xpu-vllm-lmcache-connector-cpu") == 2275


def test_rocm_native_patch_raises_the_triton_threshold(tmp_path: Path) -> None:
    """Run the container's own script (with vLLM swapped for `true`) against a copy of the kernel file."""
    container = _container(_server("amd-vllm-native-cpu"))
    kernel = tmp_path / "swap_blocks_triton.py"
    kernel.write_text("THRESHOLD_BYTES = 28 * 1024\n")
    script = (
        container["args"][0]
        .replace("/usr/local/lib/python3.12/dist-packages/vllm/v1/kv_offload/cpu/swap_blocks_triton.py", str(kernel))
        .replace("exec vllm serve", "true")
    )
    subprocess.run([*container["command"], script], check=True)
    assert kernel.read_text() == "THRESHOLD_BYTES = 40 * 1024\n"
    assert (
        _kv(_container(_server("amd-vllm-native-fs")))["kv_connector_extra_config"]["spec_name"]
        == "TieringOffloadingSpec"
    )


def test_models_with_mixed_attention_layers_get_the_hybrid_flag_with_the_native_connector() -> None:
    """The seed's Gemma 4 note: the native connector needs the hybrid KV-cache manager off."""
    import dataclasses

    from components.catalog.models import MODELS
    from components.specs.servers.vllm import vllm_args
    from stacks.config import loading
    from stacks.planning.plan import plan

    spec = plan(loading.load_preset("gpu-vllm-native-cpu")).model_server
    assert "--disable-hybrid-kv-cache-manager" not in vllm_args(spec)
    hybrid = dataclasses.replace(MODELS["Qwen/Qwen3-32B"], hybrid_attention=True)
    assert "--disable-hybrid-kv-cache-manager" in vllm_args(dataclasses.replace(spec, model=hybrid))
    lmcache = plan(loading.load_preset("gpu-vllm-lmcache-connector-cpu")).model_server
    assert "--disable-hybrid-kv-cache-manager" not in vllm_args(dataclasses.replace(lmcache, model=hybrid))


@pytest.mark.parametrize("module_loaded", [True, False])
def test_tpu_node_setup_sets_the_dma_limit_only_where_the_module_is_loaded(module_loaded: bool, tmp_path: Path) -> None:
    """The init container's script, run by a real shell: a node without vfio_iommu_type1 gets a warning, not a
    failed Init (every TPU preset runs this container)."""
    tpu = [n for n in loading.preset_names() if "tpu" in n]
    setups = [
        c
        for preset in tpu
        for _, _, pod in pods(manifests(rendered(preset)))
        for c in pod.get("initContainers", [])
        if c["name"] == "tpu-node-setup"
    ]
    assert len(setups) >= len(tpu)  # every TPU preset's pods run it (both LeaderWorkerSet roles)
    # One script everywhere (a created GKE cluster's image comes through its registry mirror).
    [setup] = {json.dumps({**c, "image": ""}, sort_keys=True): c for c in setups}.values()
    limit = tmp_path / "sys" / "dma_entry_limit"
    if module_loaded:
        limit.parent.mkdir(parents=True)
        limit.write_text("65535\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sysctl").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sysctl").chmod(0o755)
    shell, flag, script = setup["command"]
    assert (shell, flag) == ("/bin/sh", "-c")
    script = script.replace("/sys/module/vfio_iommu_type1/parameters/dma_entry_limit", str(limit))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    result = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    if module_loaded:
        assert limit.read_text().strip() == "8000000"
    else:
        assert "WARNING" in result.stdout and not limit.exists()
