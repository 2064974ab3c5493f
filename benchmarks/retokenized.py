"""How many tokens the engine sees of inference-perf's shared_prefix prompts for Qwen3, and how long the server takes
to tokenise one (the bench's prompt length; the time model's tokenising cost).

inference-perf's SharedPrefixDataGenerator (kubernetes-sigs/inference-perf, inference_perf/datagen/
shared_prefix_datagen.py `_generate_prompts`) draws `system_prompt_len` and `question_len` random token ids in
[0, vocab_size), decodes each to text (`skip_special_tokens=True`) and sends `system + " " + question`; the server
tokenises that text again, and random ids do not come back as the same count. Here: Qwen's byte-level BPE ranks
(`qwen.tiktoken`, 151,643 tokens, the vocabulary Qwen3's tokenizer.json carries, from the PyPI wheel
dashscope==2.0.2, `dashscope/resources/qwen.tiktoken`, sha256 b2b1b8df...a33186) built into a Hugging Face
`tokenizers` BPE as Qwen2TokenizerFast is (NFC, Qwen2's splitting pattern, byte-level; the merges recovered from
the ranks as transformers' tiktoken converter does): the tokenizer vLLM's API server runs on a Qwen3 prompt. Ids
are decoded as bytes (invalid UTF-8 replaced, as the byte-level decoder does), the text encoded again and timed.

Run: `pip install tokenizers numpy; pip download dashscope==2.0.2 --no-deps; unzip -o dashscope-2.0.2-*.whl
'dashscope/resources/*'; python benchmarks/retokenized.py dashscope/resources/qwen.tiktoken`.

Run on 2026-12-04 (this workplace's shared machine, tokenizers 0.23.3, numpy seed 0, 100 prompts: 20 system
prompts x 5 questions): system prompt 16,826 tokens, question 269, prompt 17,097 (16,000 + 1 + 256 asked). On the
machine idle (one AMD EPYC core, load 0.1): one prompt encoded in 51.2 ms (median; 35.6 ms at least, 85.6 at most),
3.00 us a token, the figure the time model takes (components/catalog/rates.py `SERVER_TOKENIZE`); loaded, the same
run took 103 ms (39-170). tiktoken on the same ranks gives the same counts in 17-63 ms.
"""

from __future__ import annotations

import base64
import itertools
import platform
import sys
import time

import numpy as np
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers  # type: ignore[import-not-found]

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


def byte_alphabet() -> dict[int, str]:
    """GPT-2's byte-to-character map, the byte-level BPE's alphabet."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + k) for k, b in enumerate(others)}}


def merges_of(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merge that makes each multi-byte token: its bytes merged by the ranks below its own end in two parts."""
    out = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = [bytes([b]) for b in token]
        while True:
            found = [(ranks.get(a + b, rank), i) for i, (a, b) in enumerate(itertools.pairwise(parts))]
            best, i = min(found)
            if best >= rank:
                break
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        if len(parts) == 2:
            out.append((parts[0], parts[1]))
    return out


def qwen_tokenizer(ranks: dict[bytes, int]) -> Tokenizer:
    alphabet = byte_alphabet()

    def text(token: bytes) -> str:
        return "".join(alphabet[b] for b in token)

    bpe = models.BPE({text(t): r for t, r in ranks.items()}, [(text(a), text(b)) for a, b in merges_of(ranks)])
    tokenizer = Tokenizer(bpe)
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    return tokenizer


def main(ranks_path: str) -> None:
    with open(ranks_path, "rb") as ranks_file:
        lines = ranks_file.read().splitlines()
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in lines if line)}
    tokenizer = qwen_tokenizer(ranks)
    by_id = {rank: token for token, rank in ranks.items()}

    def decode(ids: list[int]) -> str:
        return b"".join(by_id[i] for i in ids).decode("utf-8", errors="replace")

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

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
    per_token = np.array(seconds) / np.array([c[2] for c in counts])
    print(f"{platform.processor() or platform.machine()}; {len(ranks):,} ranks; {PROMPTS} prompts of {SYSTEM:,} + 1 +")
    print(f"{QUESTION} tokens asked; mean tokens: system prompt {mean[0]:,.0f}, question {mean[1]:,.0f}, prompt")
    print(f"{mean[2]:,.0f}; one prompt encoded in {np.median(seconds) * 1000:.1f} ms (median; min")
    print(f"{min(seconds) * 1000:.1f}, max {max(seconds) * 1000:.1f}): {np.median(per_token) * 1e6:.2f} us a token")


if __name__ == "__main__":
    main(sys.argv[1])
