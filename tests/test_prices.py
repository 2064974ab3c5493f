"""The price catalog against its fixture, and the plan's cost worked by hand for a GKE and an EKS stack."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import pytest

from components.catalog import prices
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.cluster_plan import plan_cluster
from stacks.planning.plan import StackPlan, plan

FIXTURE = Path(__file__).parent / "fixtures" / "prices" / "prices.csv"


@functools.cache
def _plan(name: str, overrides: tuple[str, ...] = ()) -> StackPlan:
    return plan(loading.load_named(name, list(overrides)))


def test_every_price_is_its_fixture_row() -> None:
    with FIXTURE.open(encoding="utf-8") as f:
        rows = [
            prices.Price(r["item"], r["region"], r["unit"], float(r["usd"]), r["source"], r["as_of"], r["how"])
            for r in csv.DictReader(f)
        ]
    assert list(prices.PRICES) == rows
    assert len(prices.BY_KEY) == len(rows)  # one row per item and region


def test_efs_prices_are_the_published_rates() -> None:
    """EFS in us-east-1: $0.30 per GB-month stored, $0.03 per GB read and $0.06 per GB written (Elastic)."""
    assert prices.BY_KEY["efs-storage", "us-east-1"].usd == 0.30
    assert prices.BY_KEY["efs-read", "us-east-1"].usd == 0.03
    assert prices.BY_KEY["efs-write", "us-east-1"].usd == 0.06


def test_gke_cost_by_hand() -> None:
    """gke-h100-lustre: 1 x a3-highgpu-8g (9.46006 VM + 33.60609 for 8 H100s) + the $0.10 cluster fee + the
    system pool, 3 x e2-standard-8 at 0.26805 (a regional pool) = 43.97030 $/hour, Lustre unpriced; with the
    system machine and Lustre (9000 GiB at 1000 MB/s/TiB) overridden at 0.27 and 0.60:
    43.06615 + 0.10 + 3 x 0.27 + 9000 x 0.60 / 730 = 51.37341 $/hour."""
    cost = _plan("gke-h100-lustre").cost
    assert cost is not None and cost.region == "us-central1"
    assert cost.usd_per_hour == pytest.approx(43.06615 + 0.10 + 3 * 0.26805)
    assert [u.what.split(":")[0] for u in cost.unpriced] == ["Managed Lustre"]
    priced = _plan("gke-h100-lustre", ("pricing.prices.e2-standard-8=0.27", "pricing.prices.lustre-1000=0.6")).cost
    assert priced is not None and not priced.unpriced
    assert priced.usd_per_hour == pytest.approx(51.37341, abs=1e-5)
    assert priced.usd_per_month == pytest.approx(51.37341 * 730, abs=1e-2)
    assert {p.item for p in priced.prices if p.overridden} == {"e2-standard-8", "lustre-1000"}


def test_eks_cost_by_hand() -> None:
    """eks-h100-efs: 1 x p5.48xlarge (55.04) + the $0.10 fee + 2 x m6i.2xlarge (0.384) + EFS holding up to the
    evictor's high watermark of its 9000 GiB budget at $0.30/GB-month; its throughput needs a workload."""
    stack_plan = _plan("eks-h100-efs")
    cost, shared = stack_plan.cost, stack_plan.shared_tier
    assert cost is not None and shared is not None and cost.region == "us-east-1"
    held_gb = 9000 * 2**30 * shared.capacity.high / 1e9
    assert cost.usd_per_hour == pytest.approx(55.04 + 0.10 + 2 * 0.384 + held_gb * 0.30 / 730)
    assert [u.what for u in cost.unpriced] == ["EFS elastic throughput"]


SHARED = (
    "workload.shared_prefix.num_groups=20",
    "workload.shared_prefix.num_prompts_per_group=10",
    "workload.shared_prefix.system_prompt_len=4096",
    "workload.shared_prefix.question_len=512",
    "workload.shared_prefix.output_len=64",
    "workload.shared_prefix.request_rate=4",
    "workload.shared_prefix.duration=120",
    "workload.block_tokens=512",
)


def test_efs_throughput_is_charged_per_gb_at_the_workload_rates() -> None:
    stack_plan = _plan("eks-h100-efs", SHARED)
    cost, curve = stack_plan.cost, stack_plan.tier_curve
    assert cost is not None and curve is not None and not cost.unpriced
    fs = curve.configured[1]
    cpu = curve.configured[0]
    read_bps = float(curve.curve.fs_tokens[cpu, fs]) * curve.shape.model.kv_bytes_per_token.bytes / curve.duration_s
    write_bps = curve.store_rate(int(curve.curve.fs_stored_blocks[cpu, fs]))
    by_item = {line.price.item: line for line in cost.lines}
    assert by_item["efs-read"].usd_per_hour == pytest.approx(read_bps * 3600 / 1e9 * 0.03)
    assert by_item["efs-write"].usd_per_hour == pytest.approx(write_bps * 3600 / 1e9 * 0.06)
    tokens_per_s = curve.curve.prompt_tokens / curve.duration_s
    assert cost.usd_per_million_prompt_tokens == pytest.approx(cost.usd_per_hour / (tokens_per_s * 3600) * 1e6)
    tiers = {t.tier: t for t in cost.tiers}
    assert set(tiers) == {"CPU", "filesystem"}
    fs_cost = by_item["efs-storage"].usd_per_hour + by_item["efs-read"].usd_per_hour + by_item["efs-write"].usd_per_hour
    assert tiers["filesystem"].cost_usd_per_hour == pytest.approx(fs_cost)
    net = tiers["filesystem"].net_usd_per_hour
    assert net is not None and (net < 0) == tiers["filesystem"].verdict.startswith("loses money")


def test_an_override_replaces_the_catalog_price_and_is_marked() -> None:
    cost = _plan("eks-h100-efs", ("pricing.prices={p5.48xlarge: 31.5}",)).cost
    assert cost is not None
    line = next(x for x in cost.lines if x.price.item == "p5.48xlarge")
    assert line.usd_per_hour == 31.5 and line.price.overridden and line.price.source == "pricing.prices"


REJECTED = [
    (("pricing.prices={p5.48xlarge: -1}",), "pricing.prices.p5.48xlarge = -1: must be a number of US dollars"),
    (("pricing.prices={p5.48xlarge: cheap}",), "pricing.prices.p5.48xlarge = 'cheap': must be a number"),
    (("pricing.monthly_budget=3 EUR",), "pricing.monthly_budget = '3 EUR': must be US dollars per month"),
    (("pricing.monthly_budget=80/hour",), "must be US dollars per month"),
    (
        (
            "cluster.eks.region=eu-west-1",
            "cluster.eks.availability_zones=[eu-west-1a, eu-west-1b]",
            "pricing.monthly_budget=50000",
        ),
        "pricing.prices.p5.48xlarge = 'eu-west-1': the price catalog has no prices for this region",
    ),
]


@pytest.mark.parametrize(("overrides", "message"), REJECTED)
def test_bad_pricing_is_one_line(overrides: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_named("eks-h100-efs", list(overrides)))
    text = str(caught.value)
    assert "\n" not in text and message in text, text


def test_a_budget_with_its_unit_is_read_as_dollars_per_month() -> None:
    for written in ("25000", "25000 USD/month", "$25,000 per month"):
        cost = _plan("eks-h100-efs", (f"pricing.monthly_budget={written}",)).cost
        assert cost is not None and cost.monthly_budget == 25000.0


def test_an_uncovered_region_without_a_budget_lists_its_items_unpriced() -> None:
    sets = ("cluster.eks.region=eu-west-1", "cluster.eks.availability_zones=[eu-west-1a, eu-west-1b]")
    cost = _plan("eks-h100-efs", sets).cost
    assert cost is not None and not cost.lines
    assert "set pricing.prices.p5.48xlarge (USD per hour)" in [u.remedy for u in cost.unpriced]
    assert all("no prices for this region" in u.reason for u in cost.unpriced if u.remedy.startswith("set pricing"))


def test_an_uncovered_region_is_priced_by_overrides_alone() -> None:
    """Every priced item overridden: the region needs no catalog row."""
    items = ("p5.48xlarge", "eks-cluster", "m6i.2xlarge", "efs-storage")
    sets = ("cluster.eks.region=eu-west-1", "cluster.eks.availability_zones=[eu-west-1a, eu-west-1b]")
    overrides = "pricing.prices={" + ", ".join(f"{i}: 1" for i in items) + "}"
    cost = _plan("eks-h100-efs", (*sets, overrides)).cost
    assert cost is not None and all(p.overridden for p in cost.prices)


EXISTING_POOL = (
    "node_pools={h100: {node_count: 2, accelerator: gpu, accelerators_per_node: 8, labels: {pool: h100}}}",
    "cache.node_pool=h100",
)


def test_an_existing_cluster_prices_its_pools_by_machine_type_or_says_it_cannot() -> None:
    """2 described nodes named p5.48xlarge, priced at us-east-1: 2 x 55.04 = 110.08 $/hour."""
    named = (*EXISTING_POOL, "pricing.machine_types={h100: p5.48xlarge}")
    cost = _plan("gpu-vllm-native-cpu", (*named, "pricing.region=us-east-1")).cost
    assert cost is not None and not cost.unpriced
    assert [(x.what, x.usd_per_hour) for x in cost.lines] == [("node pool h100: 2 x p5.48xlarge", 110.08)]
    unnamed = _plan("gpu-vllm-native-cpu", EXISTING_POOL).cost
    assert unnamed is not None and not unnamed.lines
    assert [u.remedy for u in unnamed.unpriced] == ["set pricing.machine_types.h100"]
    no_region = _plan("gpu-vllm-native-cpu", named).cost
    assert no_region is not None and [u.remedy for u in no_region.unpriced] == [
        "set pricing.prices.p5.48xlarge (USD per hour)"
    ]


def test_a_machine_type_for_no_described_pool_is_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        _plan("gpu-vllm-native-cpu", (*EXISTING_POOL, "pricing.machine_types={a100: p5.48xlarge}"))
    assert str(caught.value).endswith("pricing.machine_types.a100 = 'p5.48xlarge': names no node pool; allowed: h100")


def test_a_cluster_stack_prices_what_it_creates_and_its_serving_stacks_do_not_again() -> None:
    """gke-cluster: 2 x a3-highgpu-8g + the fee + 3 x e2-standard-8 = 2 x 43.06615 + 0.10 + 3 x 0.26805 $/hour,
    its Lustre unpriced; qwen3-32b serves on it and pays for none of them."""
    cluster = plan_cluster(loading.load_named("gke-cluster", []), "gke-cluster").cost
    assert cluster is not None
    assert cluster.usd_per_hour == pytest.approx(2 * 43.06615 + 0.10 + 3 * 0.26805)
    assert [u.what.split(":")[0] for u in cluster.unpriced] == ["Managed Lustre"]
    serving = _plan("qwen3-32b").cost
    assert serving is not None and not serving.lines and not serving.unpriced
