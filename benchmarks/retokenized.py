"""How many tokens the engine sees of inference-perf's shared_prefix prompts for Qwen3 (the bench's prompt length).

inference-perf's SharedPrefixDataGenerator (kubernetes-sigs/inference-perf, inference_perf/datagen/
shared_prefix_datagen.py `_generate_prompts`) draws `system_prompt_len` and `question_len` random token ids in
[0, vocab_size), decodes each to text (`skip_special_tokens=True`) and sends `system + " " + question`; the server
tokenises that text again, and random ids do not come back as the same count. Here: Qwen's byte-level BPE ranks
(`qwen.tiktoken`, 151,643 tokens, the vocabulary Qwen3's tokenizer.json carries, from the PyPI wheel
dashscope==2.0.2, `dashscope/resources/qwen.tiktoken`, sha256 b2b1b8df...a33186), Qwen2's pre-tokenising pattern
and NFC (Qwen2TokenizerFast's normalizer), run with tiktoken: ids decoded as bytes (invalid UTF-8 replaced, as
the tokenizer's byte-level decoder does), the text encoded again.

Run: `pip install tiktoken numpy; pip download dashscope==2.0.2 --no-deps; unzip -o dashscope-2.0.2-*.whl
'dashscope/resources/*'; python benchmarks/retokenized.py dashscope/resources/qwen.tiktoken`. It prints the
mean token counts over `PROMPTS` prompts and the encode time of one prompt.

Run on 2026-12-04 (this workplace's shared machine, tiktoken 0.14.0, numpy seed 0, 100 prompts: 20 system
prompts x 5 questions): system prompt 16,826 tokens, question 269, prompt 17,097 (16,000 + 1 + 256 asked);
one prompt encoded in 17-61 ms (median; the machine shared and loaded).
"""

from __future__ import annotations

import base64
import sys
import time
import unicodedata

import numpy as np
import tiktoken  # type: ignore[import-not-found]

QWEN2_PATTERN = "|".join(
    (
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)",
        r"[^\r\n\p{L}\p{N}]?\p{L}+",
        r"\p{N}",
        r" ?[^\s\p{L}\p{N}]+[\r\n]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    )
)
SYSTEM, QUESTION, GROUPS, PER_GROUP = 16_000, 256, 20, 5
PROMPTS = GROUPS * PER_GROUP


def main(ranks_path: str) -> None:
    with open(ranks_path, "rb") as ranks_file:
        lines = ranks_file.read().splitlines()
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in lines if line)}
    encoding = tiktoken.Encoding("qwen", pat_str=QWEN2_PATTERN, mergeable_ranks=ranks, special_tokens={})
    by_id = {rank: token for token, rank in ranks.items()}

    def decode(ids: list[int]) -> str:
        return b"".join(by_id[i] for i in ids).decode("utf-8", errors="replace")

    def count(text: str) -> int:
        return len(encoding.encode_ordinary(unicodedata.normalize("NFC", text)))

    draw = np.random.default_rng(0)
    counts, seconds = [], []
    for _ in range(GROUPS):
        system = decode(draw.integers(0, len(ranks), SYSTEM).tolist())
        for _ in range(PER_GROUP):
            question = decode(draw.integers(0, len(ranks), QUESTION).tolist())
            start = time.perf_counter()
            prompt = count(system + " " + question)
            seconds.append(time.perf_counter() - start)
            counts.append((count(system), count(question), prompt))
    mean = np.mean(counts, axis=0)
    print(f"{len(ranks):,} ranks; {PROMPTS} prompts of {SYSTEM:,} + 1 + {QUESTION} tokens asked")
    print(f"mean tokens: system prompt {mean[0]:,.0f}, question {mean[1]:,.0f}, prompt {mean[2]:,.0f}")
    print(f"encode time of one prompt: median {np.median(seconds) * 1000:.1f} ms, max {max(seconds) * 1000:.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1])
