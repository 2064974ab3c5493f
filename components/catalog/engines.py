"""What the model-server engines do by default with device memory, read from their own source.

The HBM budget (components/formulas/hbm.py) starts from these where the stack renders no value of its own.
"""

from __future__ import annotations

from typing import Literal

from components.units import GiB

# The model-server engines a stack runs (`cache.server`; what a tier's files and a pod's engine label say).
EngineKey = Literal["vllm", "sglang"]

# vLLM `CacheConfig.gpu_memory_utilization: float = 0.9` (vllm/config/cache.py): "the fraction of GPU memory
# to be used for the model executor", weights, activations and KV together. The TPU engine (tpu-inference)
# takes the same flag and default.
VLLM_MEMORY_FRACTION = 0.9
VLLM_MEMORY_FRACTION_FROM = "vLLM's default `--gpu-memory-utilization` (vllm/config/cache.py)"

# vLLM's scheduler limits by device memory for the OpenAI server (vllm/engine/arg_utils.py
# `_set_default_args`): devices of at least 70 GiB take 8192 batched tokens and 1024 sequences, smaller ones
# 2048 and 256. Its start-up profile run peaks at these; so does the activation reserve derived from them.
LARGE_DEVICE = 70 * GiB
LARGE_DEVICE_BATCH = (8192, 1024)  # max_num_batched_tokens, max_num_seqs
SMALL_DEVICE_BATCH = (2048, 256)

# Engines whose guide image runs as its root user (the pods carry `labels.ENGINE_TYPE_LABEL`; SGLang's JIT
# caches under $HOME have no writable mount): components/specs/security.py exempts them.
ROOT_ENGINES = frozenset({"sglang"})

# Bytes of one logit: the sampler holds the vocabulary's logits in float32 for every sequence of a batch.
LOGIT_BYTES = 4
