"""What a replica's accelerators hold for KV: device memory x the engine's share, less the weights and the
engine's working memory, per replica (the devices one replica shards over, all its pods).

vLLM sizes its KV pool the same way at start: total memory x `gpu_memory_utilization`, less the weights and
the peak its profile run measures (activations of one full batch, the sampler's logits) and the memory
outside torch (the runtime's context, communication buffers, captured graphs); the rest is KV, and it refuses
to start when that is less than one `--max-model-len` sequence. SGLang's `--mem-fraction-static` is the share
for weights and the KV pool together, the same budget. The activation peak here is derived from the model's
widths at the engine's default batch limits (an estimate of what the profile run measures; the runtime part
is the accelerator profile's estimate): both are shown with the result.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.accelerators import AcceleratorProfile
from components.catalog.engines import LARGE_DEVICE, LARGE_DEVICE_BATCH, LOGIT_BYTES, SMALL_DEVICE_BATCH
from components.catalog.models import DTYPE_BYTES, ModelSpec
from components.units import ByteSize, GiB

# Hidden-sized activations one token keeps live at the peak of a layer: the residual stream, the normed
# input, the attention output and the projections' output; the MLP adds its gate and up outputs and their
# product, each of the MLP's width over the tensor-parallel ranks.
HIDDEN_BUFFERS = 4
MLP_BUFFERS = 3


def gib(size: int) -> str:
    """A size for reading: GiB with one decimal (byte counts of a budget are rarely whole units)."""
    return f"{size / GiB:.1f} GiB"


def batch_limits(accelerator: AcceleratorProfile) -> tuple[int, int]:
    """vLLM's default (max_num_batched_tokens, max_num_seqs) on this device."""
    return LARGE_DEVICE_BATCH if accelerator.device_memory.bytes >= LARGE_DEVICE else SMALL_DEVICE_BATCH


def activation_bytes_per_token(model: ModelSpec, tensor_parallelism: int) -> int:
    width = model.expert_intermediate_size * model.experts_per_token if model.experts else model.intermediate_size
    elements = HIDDEN_BUFFERS * model.hidden_size + MLP_BUFFERS * width // tensor_parallelism
    return elements * DTYPE_BYTES[model.weight_dtype]


def kv_replication(model: ModelSpec, tensor_parallelism: int) -> int:
    """vLLM replicates KV heads over ranks when there are more ranks than KV heads."""
    return max(1, tensor_parallelism // model.kv_heads)


@dataclass(frozen=True)
class HbmBudget:
    model: ModelSpec
    accelerator: AcceleratorProfile
    devices: int  # per replica (TPU: chips), over every pod of a multi-host replica
    tensor_parallelism: int
    memory_fraction: float
    memory_fraction_from: str
    max_model_len: int
    max_model_len_from: str

    @property
    def batch(self) -> tuple[int, int]:
        return batch_limits(self.accelerator)

    @property
    def usable_per_device(self) -> int:
        return int(self.accelerator.device_memory.bytes * self.memory_fraction)

    @property
    def weights_per_device(self) -> int:
        return -(-self.model.weight_bytes.bytes // self.devices)

    @property
    def activations_per_device(self) -> int:
        tokens, seqs = self.batch
        logits = seqs * self.model.vocab_size * LOGIT_BYTES
        return tokens * activation_bytes_per_token(self.model, self.tensor_parallelism) + logits

    @property
    def reserve_per_device(self) -> int:
        return self.accelerator.runtime_reserve.bytes + self.activations_per_device

    @property
    def kv_per_device(self) -> int:
        """Negative when the weights and the working memory alone exceed the engine's share."""
        return self.usable_per_device - self.weights_per_device - self.reserve_per_device

    @property
    def kv_bytes(self) -> ByteSize:
        """The replica's HBM KV capacity (0 when nothing is left)."""
        return ByteSize(max(0, self.kv_per_device) * self.devices)

    @property
    def kv_bytes_per_token(self) -> int:
        return self.model.kv_bytes_per_token.bytes * kv_replication(self.model, self.tensor_parallelism)

    @property
    def kv_tokens(self) -> int:
        return self.kv_bytes.bytes // self.kv_bytes_per_token

    @property
    def weights_fit(self) -> bool:
        return self.kv_per_device > 0

    @property
    def context_fits(self) -> bool:
        return self.kv_tokens >= self.max_model_len

    def rows(self) -> list[tuple[str, str, str]]:
        """(quantity, value, formula) for the summary's sizing table."""
        device = self.accelerator.device_memory
        tokens, seqs = self.batch
        return [
            ("device memory", gib(device.bytes), self.accelerator.device_memory_from),
            (
                "engine memory share",
                f"{self.memory_fraction:g}",
                self.memory_fraction_from,
            ),
            (
                "weights per device",
                gib(self.weights_per_device),
                f"{self.model.params_billion:g}B parameters x {DTYPE_BYTES[self.model.weight_dtype]} B"
                f" / {self.devices} devices",
            ),
            (
                "working memory per device",
                gib(self.reserve_per_device),
                f"runtime {gib(self.accelerator.runtime_reserve.bytes)} (estimate: context, communication buffers,"
                f" graphs) + activations of {tokens} batched tokens"
                f" ({activation_bytes_per_token(self.model, self.tensor_parallelism)} B each) + logits of"
                f" {seqs} sequences x {self.model.vocab_size} x {LOGIT_BYTES} B (vLLM's default batch limits)",
            ),
            (
                "HBM KV per replica",
                f"{gib(self.kv_bytes.bytes)} ({self.kv_tokens:,} tokens)",
                f"{self.devices} x ({gib(device.bytes)} x {self.memory_fraction:g} - weights - working memory);"
                f" tokens at {self.kv_bytes_per_token} B"
                + (
                    f" (KV heads replicated x{kv_replication(self.model, self.tensor_parallelism)})"
                    if kv_replication(self.model, self.tensor_parallelism) > 1
                    else ""
                ),
            ),
            (
                "longest sequence (`--max-model-len`)",
                f"{self.max_model_len:,} tokens",
                self.max_model_len_from,
            ),
        ]
