"""What the model cache relies on about the engines' images (pure data, with sources)."""

from __future__ import annotations

from components.units import GB, MiB

# Images whose engine loads with the Run:ai Model Streamer (`--load-format runai_streamer`): the
# package must be in the image, not only the choice in the parser. It reads safetensors with many
# concurrent requests, which is what a network filesystem (Lustre, EFS, any ReadWriteMany volume)
# needs to deliver its bandwidth to one pod.
# - vllm/vllm-openai: vLLM's Dockerfile installs the `runai` extra into the release image
#   (vllm-project/vllm docker/Dockerfile, `vllm-openai` stage); `--load-format` is a free string in
#   vLLM 0.26's parser (engine contract), resolved by its model-loader registry, where the 0.26.0 wheel
#   registers `runai_streamer` (model_executor/model_loader/__init__.py `_LOAD_FORMAT_TO_MODEL_LOADER`,
#   RunaiModelStreamerLoader; the wheel's `runai` extra pins runai-model-streamer>=0.15.7).
# - vllm/vllm-tpu: the llm-d guide's TPU v7 multi-host server already starts with
#   `--load-format=runai_streamer` (llm-d/llm-d#2313, shared/reference/llm-d-upstream.md section 12).
# Not listed (their images are not known to carry the package, so they load with the default
# safetensors loader from the same local path): SGLang (`runai_streamer` is a choice of its 0.5.16
# parser, but lmsysorg/sglang is not known to install `runai-model-streamer`), llm-d's ROCm and
# XPU images, LMCache's vLLM image.
RUNAI_STREAMER_IMAGES = ("docker.io/vllm/vllm-openai", "docker.io/vllm/vllm-tpu")


def image_repository(image: str) -> str:
    """`docker.io/vllm/vllm-openai:v0.26.0` -> `docker.io/vllm/vllm-openai` (digests too)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name[: len(name) - len(last)] + last.split(":", 1)[0]


def streams_weights(image: str) -> bool:
    return image_repository(image) in RUNAI_STREAMER_IMAGES


# --- cold-start figures of the model cache (components/specs/startup.py's parts) -------------------

# A dedicated claim's StorageClass is not known: assume a modest ReadWriteMany class per pod (Filestore
# Basic HDD reads 180 MiB/s per instance; Basic SSD 1.2 GiB/s): on the slow side, so budgets hold.
ASSUMED_DEDICATED_READ_BYTES_PER_SECOND = 180 * MiB

# The Run:ai Model Streamer reads safetensors with many concurrent requests and copies each tensor to
# the device as it arrives, so after the read only the last copies remain: the host-to-device rate of
# one rank (PCIe Gen4 x16 ~25 GB/s) halved for contention (estimate, on the slow side).
STREAMED_LOAD_BYTES_PER_SECOND = 12 * GB

# The share of its compile a warm compile cache leaves is a field of each accelerator's profile
# (`warm_compile_ratio`, components/catalog/accelerators.py).
