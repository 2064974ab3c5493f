"""A workload measured before it is replayed (components/formulas/replay_work.py): each request must fit the
context the servers take, and the whole within the replay's bound and over a span of time; otherwise one line
naming the workload, the request and the figure."""

from __future__ import annotations

from collections.abc import Iterator

from components.formulas import replay_work
from components.formulas.hbm import HbmBudget
from components.formulas.requests import Request
from stacks.config.errors import ConfigError


def check_work(description: str, requests: Iterator[Request], block_tokens: int, hbm: HbmBudget) -> replay_work.Work:
    """`description`: the workload as the summary names it (where it came from); `hbm`: the servers' budget,
    whose max_model_len is the longest prompt and output they take."""
    work = replay_work.measure(requests, block_tokens, hbm.max_model_len)
    if work.longest_tokens > hbm.max_model_len:
        model = hbm.model
        raise ConfigError(
            f"{description}: request {work.longest_request:,}",
            f"{work.longest_tokens:,} tokens",
            f"prompt and output longer than the {hbm.max_model_len:,} a server takes ({hbm.max_model_len_from};"
            f" {model.name}'s context_tokens: {model.context_tokens:,}): no server would serve it, so no tier"
            " would hold it",
        )
    problem = replay_work.problem(work)
    if problem is not None:
        requests_text = f"{'at least ' if work.stopped else ''}{work.requests:,} requests"
        raise ConfigError(description, requests_text, problem)
    return work
