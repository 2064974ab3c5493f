"""The P/D replay held to hand arithmetic on small cases (components/formulas/pd_replay.py)."""

from __future__ import annotations

import math

import pytest

from components.formulas.load_costs import LoadCosts
from components.formulas.pd_replay import Handoff, decode_after, handoff
from components.formulas.serving_time import EngineCosts, Work, fixed, serve

# Engines with round figures: a prefill token costs 0.1 ms of GEMMs; a decode step reads the weights in 20 ms
# whatever its size (GEMMs of a few tokens never bind); no attention, no fixed step cost, room for everything.
PREFILL = EngineCosts(1e-4, 0.0, 0.02, 0.0, LoadCosts(0.0, 0.0), 8192, 256, 10**7)
DECODE = EngineCosts(0.0, 0.0, 0.02, 0.0, LoadCosts(0.0, 0.0), 8192, 256, 10**7)
LINK = Handoff(kv_bytes_per_token=1000, bandwidth=1e6)  # 1 ms a prompt token


def test_one_request_by_hand() -> None:
    """1,000-token prompt, 10 output tokens. Prefill: 1,000 x 0.1 ms = 100 ms (above the 20 ms weight read), its one
    token at 0.100 s. Handoff: 1,000 x 1,000 B / 1 MB/s = 1.000 s, ready at 1.100 s. Decode: the first step computes
    the last prompt token in 20 ms (first token 1.120 s), nine more at 20 ms each. TTFT 1.120 s, TPOT 20 ms."""
    arrivals, pick = fixed([(0, Work(0.0, 1000, 0, 0, 0, 1))])
    prefill = serve(arrivals, PREFILL, 1, pick)
    pd = decode_after(prefill, [1000], [10], LINK, DECODE, 1)
    assert prefill.record.finish[0] == pytest.approx(0.100)
    assert pd.handoff_s[0] == pytest.approx(1.000)
    assert pd.ttft_s[0] == pytest.approx(1.120)
    assert pd.tpot_s[0] == pytest.approx(0.020)
    assert pd.decode.record.finish[0] == pytest.approx(1.120 + 9 * 0.020)


def test_two_requests_share_one_prefill_engine_and_arrive_apart() -> None:
    """Both at t=0 on one prefill engine: one 1,500-token step, 150 ms, both first tokens at 0.150 s. Handoffs: 1.0 s
    and 0.5 s (1,000 and 500 tokens): ready at 1.150 and 0.650. On two decode engines each starts alone: TTFT 1.170
    and 0.670, 20 ms a token."""
    arrivals, pick = fixed([(0, Work(0.0, 1000, 0, 0, 0, 1)), (0, Work(0.0, 500, 0, 0, 0, 1))])
    prefill = serve(arrivals, PREFILL, 1, pick)
    assert list(prefill.record.finish) == pytest.approx([0.150, 0.150])
    two = decode_after(prefill, [1000, 500], [5, 100], LINK, DECODE, 2)
    assert list(two.ttft_s) == pytest.approx([1.170, 0.670])
    assert two.tpot(0.5) == pytest.approx(0.020)


def test_the_fabric_is_the_fewer_side_s_devices() -> None:
    """TP 2 prefill to TP 4 decode at 50 GB/s a NIC: two NICs, 100 GB/s; 262,144 B a token (Qwen3-32B) x 10,000
    tokens = 2.62 GB in 26.2 ms."""
    link = handoff(262_144, 2, 4, 50e9)
    assert link.bandwidth == 100e9
    assert link.seconds(10_000) == pytest.approx(0.0262144)
    assert math.isclose(handoff(262_144, 8, 1, 50e9).bandwidth, 50e9)
