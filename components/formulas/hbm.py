"""What a replica's accelerators hold for KV: device memory x the engine's share, less the weights and the
engine's working memory, per replica (the devices one replica shards over, all its pods), less what the
connector stages in HBM.

vLLM sizes its KV pool the same way at start: total memory x `gpu_memory_utilization`, less the weights and
what its runtime keeps out of the pool (components/catalog/device_runtimes.py): on a GPU the peak its profile
run measures (activations of one full batch, the sampler's logits) and the memory outside torch (the runtime's
context, communication buffers, captured graphs); on a TPU nothing beside the share. The rest is KV, and it
refuses to start when that is less than one `--max-model-len` sequence. SGLang's `--mem-fraction-static` is the
share for weights and the KV pool together, the same budget. The activation peak here is derived from the
model's widths at the engine's default batch limits (an estimate of what the profile run measures; the runtime
part is the runtime's estimate): both are shown with the result. The TPU offload connector's staging buffer
(`TPU_OFFLOAD_NUM_STAGING_BLOCKS` KV blocks) is deducted from the replica's pool as tpu_inference deducts it.
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


def gib(size: int, places: int = 1) -> str:
    """A size for reading: GiB with one decimal (byte counts of a budget are rarely whole units); a device's
    memory with two, as its tools print it (191.98 GiB, not 192.0)."""
    return f"{size / GiB:.{places}f} GiB"


def batch_limits(accelerator: AcceleratorProfile) -> tuple[int, int]:
    """vLLM's default (max_num_batched_tokens, max_num_seqs) on this device."""
    return LARGE_DEVICE_BATCH if accelerator.device_memory.bytes >= LARGE_DEVICE else SMALL_DEVICE_BATCH


def activation_bytes_per_token(model: ModelSpec, tensor_parallelism: int) -> int:
    """A token's live activations at a layer's peak; the widest MLP of the model's layers (an expert layer's: the
    activated and shared experts')."""
    widths = ([model.moe_mlp_width] if model.moe_layers else []) + (
        [model.intermediate_size] if model.dense_layers else []
    )
    width = max(widths)
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
    # KV blocks the connector stages in HBM for its copies, per replica (the TPU offload connector's
    # `TPU_OFFLOAD_NUM_STAGING_BLOCKS`), their tokens per block, and where the count comes from; 0: none.
    staging_blocks: int = 0
    staging_block_tokens: int = 0
    staging_from: str = ""

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
    def profiled_per_device(self) -> int:
        """The activation peak the engine keeps out of the pool (0 where its runtime runs no profile batch)."""
        return self.activations_per_device if self.accelerator.runtime.profiles_activations else 0

    @property
    def reserve_per_device(self) -> int:
        return self.accelerator.runtime.reserve.bytes + self.profiled_per_device

    @property
    def kv_per_device(self) -> int:
        """Negative when the weights and the working memory alone exceed the engine's share."""
        return self.usable_per_device - self.weights_per_device - self.reserve_per_device

    @property
    def kv_bytes_per_token(self) -> int:
        return self.model.kv_bytes_per_token.bytes * kv_replication(self.model, self.tensor_parallelism)

    @property
    def staging_bytes(self) -> int:
        """The connector's HBM staging buffer, per replica (its blocks at the pool's page size)."""
        return self.staging_blocks * self.staging_block_tokens * self.kv_bytes_per_token

    @property
    def kv_bytes(self) -> ByteSize:
        """The replica's HBM KV capacity (0 when nothing is left)."""
        return ByteSize(max(0, max(0, self.kv_per_device) * self.devices - self.staging_bytes))

    @property
    def kv_tokens(self) -> int:
        return self.kv_bytes.bytes // self.kv_bytes_per_token

    @property
    def weights_fit(self) -> bool:
        return self.kv_per_device > 0

    @property
    def context_fits(self) -> bool:
        return self.kv_tokens >= self.max_model_len

    def derivation(self) -> str:
        """How the replica's HBM KV was derived, in one line (the summary's row and `./run size`)."""
        staging = f" - {gib(self.staging_bytes)} staging" if self.staging_blocks else ""
        return (
            f"{self.devices} x ({gib(self.accelerator.device_memory.bytes, 2)} x {self.memory_fraction:g}"
            f" - {gib(self.weights_per_device)} weights - {gib(self.reserve_per_device)} working memory){staging}"
            f" = {gib(self.kv_bytes.bytes)}"
        )

    def _working_memory(self) -> str:
        runtime = self.accelerator.runtime
        if not runtime.reserve.bytes and not runtime.profiles_activations:
            return f"{runtime.name}: none beside the share ({runtime.reserve_from}); {runtime.sizing_from}"
        reserve = f"{runtime.name} runtime {gib(runtime.reserve.bytes)} ({runtime.reserve_from})"
        if not runtime.profiles_activations:
            return f"{reserve}; {runtime.sizing_from}"
        tokens, seqs = self.batch
        return (
            f"{reserve} + activations of {tokens} batched tokens"
            f" ({activation_bytes_per_token(self.model, self.tensor_parallelism)} B each) + logits of"
            f" {seqs} sequences x {self.model.vocab_size} x {LOGIT_BYTES} B (vLLM's default batch limits;"
            f" {runtime.sizing_from})"
        )

    def rows(self) -> list[tuple[str, str, str]]:
        """(quantity, value, formula) for the summary's sizing table."""
        replicated = kv_replication(self.model, self.tensor_parallelism)
        staging = [
            (
                "HBM staging buffer per replica",
                gib(self.staging_bytes),
                f"{self.staging_blocks} blocks ({self.staging_from}) x {self.staging_block_tokens} tokens x"
                f" {self.kv_bytes_per_token} B: tpu_inference deducts it from the KV pool",
            )
        ]
        return [
            ("device memory", gib(self.accelerator.device_memory.bytes, 2), self.accelerator.device_memory_from),
            (
                "engine memory share",
                f"{self.memory_fraction:g}",
                self.memory_fraction_from,
            ),
            (
                "weights per device",
                gib(self.weights_per_device),
                self.model.weight_formula(self.devices),
            ),
            ("working memory per device", gib(self.reserve_per_device), self._working_memory()),
            *(staging if self.staging_blocks else []),
            (
                "HBM KV per replica",
                f"{gib(self.kv_bytes.bytes)} ({self.kv_tokens:,} tokens)",
                f"{self.derivation()}; tokens at {self.kv_bytes_per_token} B"
                + (f" (KV heads replicated x{replicated})" if replicated > 1 else ""),
            ),
            (
                "longest sequence (`--max-model-len`)",
                f"{self.max_model_len:,} tokens",
                self.max_model_len_from,
            ),
        ]
