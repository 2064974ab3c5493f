"""The price catalog against its fixture and its second sources, the plan's cost worked by hand for a GKE and an
EKS stack, the rate kind a stack is priced at, and each decision the cost makes at its edges."""

from __future__ import annotations

import csv
import functools
from pathlib import Path
from types import ModuleType

import pytest

from components.catalog import prices
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.cluster_plan import plan_cluster
from stacks.planning.plan import StackPlan, plan
from stacks.review.cost_summary import cost_lines, headline
from tests.helpers import script_module

FIXTURES = Path(__file__).parent / "fixtures" / "prices"
FIXTURE = FIXTURES / "prices.csv"


@functools.cache
def _plan(name: str, overrides: tuple[str, ...] = ()) -> StackPlan:
    return plan(loading.load_named(name, list(overrides)))


def _refresh() -> ModuleType:
    return script_module("prices_refresh", FIXTURES / "refresh.py")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_fixture_csv_is_the_catalog_written_out() -> None:
    """prices.csv is generated from components/catalog/prices.py (`./run golden`), one row per item, region, kind."""
    assert FIXTURE.read_text(encoding="utf-8") == prices.csv_text()
    rows = _rows(FIXTURE)
    assert [(r["item"], r["region"], r["kind"], float(r["usd"])) for r in rows] == [
        (p.item, p.region, p.kind, p.usd) for p in prices.PRICES
    ]
    assert len(prices.BY_KEY) == len(rows)


def test_every_row_states_its_rate_kind_and_source() -> None:
    assert {p.kind for p in prices.PRICES} <= set(prices.RATE_KINDS)
    assert all(p.source and p.as_of and p.how for p in prices.PRICES)


def test_the_h100_rows_are_the_on_demand_list_price() -> None:
    """a3-highgpu-8g on demand: $88.49/hour in us-central1 (GCP's list price), $112.54048 in europe-west4; the
    discounted $43.06615 SkyPilot row is gone."""
    assert prices.BY_KEY["a3-highgpu-8g", "us-central1", "on-demand"].usd == 88.49
    assert prices.BY_KEY["a3-highgpu-8g", "europe-west4", "on-demand"].usd == 112.54048
    assert all(p.usd != 43.06615 for p in prices.PRICES)


def test_every_row_agrees_with_its_second_source() -> None:
    refresh = _refresh()
    rows, second = _rows(FIXTURE), _rows(FIXTURES / "second_sources.csv")
    assert refresh.compared(rows, second) == [
        ("a3-highgpu-8g", "us-central1", "on-demand"),
        ("a3-highgpu-8g", "europe-west4", "on-demand"),
        ("e2-standard-8", "us-central1", "on-demand"),
        ("e2-standard-8", "europe-west4", "on-demand"),
        ("efs-read", "us-east-1", "on-demand"),
        ("efs-write", "us-east-1", "on-demand"),
        ("gke-cloud-nat-vm", "us-central1", "on-demand"),
        ("gke-cloud-nat-vm", "europe-west4", "on-demand"),
        ("gke-cloud-nat-gateway", "us-central1", "on-demand"),
        ("gke-cloud-nat-gateway", "europe-west4", "on-demand"),
        ("gke-nat-ip", "us-central1", "on-demand"),
        ("gke-nat-ip", "europe-west4", "on-demand"),
        ("gce-pd-balanced", "us-central1", "on-demand"),
        ("gce-pd-balanced", "europe-west4", "on-demand"),
        ("eks-nat-gateway", "us-east-1", "on-demand"),
        ("aws-public-ipv4", "us-east-1", "on-demand"),
        ("ebs-gp3", "us-east-1", "on-demand"),
    ]
    assert refresh.disagreements(rows, second) == []


def _planted(rows: list[dict[str, str]], usd: str) -> list[dict[str, str]]:
    """The rows with a3-highgpu-8g's us-central1 on-demand figure replaced."""
    h100 = ("a3-highgpu-8g", "us-central1", "on-demand")
    return [{**r, "usd": usd} if (r["item"], r["region"], r["kind"]) == h100 else r for r in rows]


def test_a_planted_row_twice_its_second_source_fails_the_check() -> None:
    refresh = _refresh()
    rows, second = _rows(FIXTURE), _rows(FIXTURES / "second_sources.csv")
    planted = [{**r, "usd": str(2 * float(r["usd"]))} if r["item"] == "e2-standard-8" else r for r in rows]
    problems = refresh.disagreements(planted, second)
    assert [line.split(":")[0] for line in problems] == [
        "e2-standard-8 us-central1 on-demand",
        "e2-standard-8 europe-west4 on-demand",
    ]
    assert "100% from 0.26805" in problems[0]
    # the boundary, against the npm package's 87.83247: 9.9% above passes, 10.1% above fails
    assert refresh.disagreements(_planted(rows, "96.52788"), second) == []
    assert len(refresh.disagreements(_planted(rows, "96.70355"), second)) == 1
    # the old SkyPilot H100 row ($43.06615) is what the check exists to catch
    old = _planted(rows, "43.06615")
    assert "51% from 87.8325" in refresh.disagreements(old, second)[0]


def test_efs_prices_are_the_published_rates() -> None:
    """EFS in us-east-1: $0.30 per GB-month stored, $0.03 per GB read and $0.06 per GB written (Elastic)."""
    assert prices.BY_KEY["efs-storage", "us-east-1", "on-demand"].usd == 0.30
    assert prices.BY_KEY["efs-read", "us-east-1", "on-demand"].usd == 0.03
    assert prices.BY_KEY["efs-write", "us-east-1", "on-demand"].usd == 0.06


# What a created cluster holds besides its machines, per hour, at the catalog's on-demand rows (written out here).
NAT_PER_VM, NAT_IP, PD_BALANCED = 0.0014, 0.005, 0.10  # us-central1: per VM-hour, per address-hour, per GiB-month
EKS_NAT, EKS_IP, GP3, GP2 = 0.045, 0.005, 0.08, 0.10  # us-east-1: per hour, per hour, per GB-month, per GB-month


def test_gke_cost_by_hand() -> None:
    """gke-h100-lustre: 1 x a3-highgpu-8g at 88.49 + the $0.10 cluster fee + the system pool, 3 x e2-standard-8
    at 0.26805 (a regional pool) + Cloud NAT for its 4 VMs (4 x 0.0014) and its one address (0.005) + the 4 nodes'
    100 GiB pd-balanced boot disks (400 x 0.10 / 730) = 89.45954 $/hour; Lustre unpriced. With Lustre and the
    system machine overridden (9000 GiB at 1000 MB/s/TiB at 0.60, e2 0.27): 96.86265 $/hour."""
    cost = _plan("gke-h100-lustre").cost
    assert cost is not None and cost.region == "us-central1"
    extras = 4 * NAT_PER_VM + NAT_IP + 400 * PD_BALANCED / 730
    assert cost.usd_per_hour == pytest.approx(88.49 + 0.10 + 3 * 0.26805 + extras)
    assert cost.usd_per_hour == pytest.approx(89.45954, abs=1e-5)
    assert [u.what.split(":")[0] for u in cost.unpriced] == ["Managed Lustre"]
    sets = ("pricing.prices={e2-standard-8: 0.27, lustre-1000: 0.6}",)
    priced = _plan("gke-h100-lustre", sets).cost
    assert priced is not None and not priced.unpriced
    assert priced.usd_per_hour == pytest.approx(88.49 + 0.10 + 3 * 0.27 + extras + 9000 * 0.60 / 730)
    assert priced.usd_per_hour == pytest.approx(96.86265, abs=1e-5)
    assert priced.usd_per_month == pytest.approx(96.86265 * 730, abs=1e-2)
    overridden = {p.item for p in priced.prices if p.overridden}
    assert overridden == {"e2-standard-8", "lustre-1000"}


def test_eks_cost_by_hand() -> None:
    """eks-h100-efs: 1 x p5.48xlarge (55.04) + the $0.10 fee + 2 x m6i.2xlarge (0.384) + the NAT gateway (0.045)
    and its Elastic IP (0.005) + the p5 node's 20 GiB gp3 root volume (its launch template leaves the AMI's) + the 2
    system nodes' 20 GiB gp2 (EKS's own template) + EFS holding up to the evictor's high watermark of its 9000 GiB
    budget at $0.30/GB-month; its throughput needs a workload."""
    stack_plan = _plan("eks-h100-efs")
    cost, shared = stack_plan.cost, stack_plan.shared_tier
    assert cost is not None and shared is not None and cost.region == "us-east-1"
    held_gb = 9000 * 2**30 * shared.capacity.high / 1e9
    extras = EKS_NAT + EKS_IP + 20 * GP3 / 730 + 2 * 20 * GP2 / 730
    assert cost.usd_per_hour == pytest.approx(55.04 + 0.10 + 2 * 0.384 + extras + held_gb * 0.30 / 730)
    assert [u.what for u in cost.unpriced] == ["EFS elastic throughput"]
    assert cost.usage == (
        "NAT gateway data processing: per GB its private nodes send through it",
        "ECR storage: per GB-month of the images its pull-through cache rules store",
    )


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
        "pricing.prices = 'eu-west-1': the price catalog has no prices for this region",
    ),
    (
        ("pricing.prices={a3-highgpu-8: 30.5}",),
        "pricing.prices.a3-highgpu-8 = 30.5: prices nothing the catalog or this stack names; known keys, nearest"
        " first: a3-highgpu-8g, ",
    ),
    (("pricing.region=us-east-1",), "pricing.region = 'us-east-1': EKS creates this cluster in us-east-1"),
    (
        ("pricing.machine_types={h100: p5.48xlarge}",),
        "pricing.machine_types = {'h100': 'p5.48xlarge'}: names the machine types of an existing cluster's",
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


def test_every_missing_price_of_a_region_is_one_error() -> None:
    """A budget in a region the catalog does not cover: one line naming every key to set, not one per run."""
    sets = (
        "cluster.eks.region=eu-west-1",
        "cluster.eks.availability_zones=[eu-west-1a, eu-west-1b]",
        "pricing.monthly_budget=50000",
    )
    with pytest.raises(ConfigError) as caught:
        _plan("eks-h100-efs", sets)
    text = str(caught.value)
    assert "\n" not in text
    assert text.endswith(
        "set to what you pay: pricing.prices.p5.48xlarge (USD per hour); pricing.prices.eks-cluster (USD per hour);"
        " pricing.prices.m6i.2xlarge (USD per hour); pricing.prices.eks-nat-gateway (USD per hour of one);"
        " pricing.prices.aws-public-ipv4 (USD per hour of one); pricing.prices.ebs-gp3 (USD per GB-month);"
        " pricing.prices.ebs-gp2 (USD per GB-month); pricing.prices.efs-storage (USD per GB-month)"
    ), text
    # every key set: the budget is judged and the plan goes on
    every = "pricing.prices={p5.48xlarge: 1, eks-cluster: 1, m6i.2xlarge: 1, eks-nat-gateway: 1, aws-public-ipv4: 1,"
    cost = _plan("eks-h100-efs", (*sets, every + " ebs-gp3: 1, ebs-gp2: 1, efs-storage: 1}")).cost
    assert cost is not None and [u.what for u in cost.unpriced] == ["EFS elastic throughput"]


def test_an_uncovered_region_without_a_budget_lists_its_items_unpriced() -> None:
    sets = ("cluster.eks.region=eu-west-1", "cluster.eks.availability_zones=[eu-west-1a, eu-west-1b]")
    cost = _plan("eks-h100-efs", sets).cost
    assert cost is not None and not cost.lines
    assert "set pricing.prices.p5.48xlarge (USD per hour)" in [u.remedy for u in cost.unpriced]
    catalog_items = [u for u in cost.unpriced if u.remedy.startswith("set pricing")]
    assert len(catalog_items) == 8 and all("no prices for this region" in u.reason for u in catalog_items)


def test_an_uncovered_region_is_priced_by_overrides_alone() -> None:
    """Every priced item overridden: the region needs no catalog row."""
    items = ["p5.48xlarge", "eks-cluster", "m6i.2xlarge", "efs-storage", "eks-nat-gateway", "aws-public-ipv4"]
    items += ["ebs-gp3", "ebs-gp2"]
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
    assert headline(cost) == "On-demand prices, region us-east-1: $110.08/hour, $80,358.40/month (730 hours)."
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
    """gke-cluster: 2 x a3-highgpu-8g + the fee + 3 x e2-standard-8 + Cloud NAT for its 5 VMs and one address + the
    5 nodes' 100 GiB pd-balanced boot disks = 2 x 88.49 + 0.10 + 3 x 0.26805 + 5 x 0.0014 + 0.005 + 500 x 0.10 / 730
    $/hour, Lustre unpriced; qwen3-32b serves on it and pays for none of them."""
    cluster = plan_cluster(loading.load_named("gke-cluster", []), "gke-cluster").cost
    assert cluster is not None
    extras = 5 * NAT_PER_VM + NAT_IP + 500 * PD_BALANCED / 730
    assert cluster.usd_per_hour == pytest.approx(2 * 88.49 + 0.10 + 3 * 0.26805 + extras)
    assert [u.what.split(":")[0] for u in cluster.unpriced] == ["Managed Lustre"]
    serving = _plan("qwen3-32b").cost
    assert serving is not None and not serving.lines and not serving.unpriced


def test_rate_kind_auto_prices_a_spot_pool_at_spot_and_the_rest_on_demand() -> None:
    """auto: a spot a3-highgpu-8g pool at 50.60954, the system pool on demand (0.26805); pricing.rate: committed
    prices both machine types at their 1-year rows (61.38367, 0.16887); a kind with no row names what prices it."""
    spot = _plan("gke-h100-lustre", ("node_pools.h100.spot=true",)).cost
    assert spot is not None
    kinds = {line.price.item: (line.price.kind, line.price.usd) for line in spot.lines}
    assert kinds["a3-highgpu-8g"] == ("spot", 50.60954)
    assert kinds["e2-standard-8"] == ("on-demand", 0.26805)
    committed = _plan("gke-h100-lustre", ("pricing.rate=committed",)).cost
    assert committed is not None
    kinds = {line.price.item: (line.price.kind, line.price.usd) for line in committed.lines}
    assert kinds["a3-highgpu-8g"] == ("committed", 61.38367)
    assert kinds["e2-standard-8"] == ("committed", 0.16887)
    assert kinds["gke-cluster"] == ("on-demand", 0.1)  # the fee has one rate
    flex = _plan("gke-h100-lustre", ("pricing.rate=flex",)).cost
    assert flex is not None
    missing = {u.what: u for u in flex.unpriced}["node pool llmd-h100-h100: 1 x a3-highgpu-8g"]
    assert missing.reason == "no catalog flex price for a3-highgpu-8g in us-central1"
    assert missing.remedy == "set pricing.prices.a3-highgpu-8g (USD per hour) or pricing.rate: on-demand"


def test_idle_nodes_of_the_serving_pool_are_named_with_their_cost() -> None:
    """gke-tpu-v6e, 3 ct6e-standard-8t nodes at 21.6: one replica (one pod of 8 chips to a node) leaves 2 idle,
    2 x 21.6 = 43.20 $/hour; three replicas leave none."""
    one = _plan("gke-tpu-v6e", ("cache.replicas=1",)).cost
    assert one is not None and len(one.idle) == 1
    idle = one.idle[0]
    assert (idle.pool, idle.idle, idle.nodes) == ("tpu-v6", 2, 3)
    assert idle.usd_per_hour == pytest.approx(43.2)
    assert any(line.startswith("- idle: 2 of node pool tpu-v6's 3 nodes") for line in cost_lines(one))
    three = _plan("gke-tpu-v6e", ("cache.replicas=3",)).cost
    assert three is not None and three.idle == ()


def test_the_headline_never_prints_a_partial_sum_as_the_total() -> None:
    partial = _plan("gke-h100-lustre").cost
    assert partial is not None
    assert headline(partial) == (
        "No total (region us-central1): 1 item below is not priced. The priced lines (on-demand prices) come to"
        " $89.46/hour, $65,305.47/month (730 hours), which leaves it out."
    )
    complete = _plan("gke-h100-lustre", ("pricing.prices.lustre-1000=0.6",)).cost
    assert complete is not None and not complete.unpriced
    assert headline(complete).startswith("On-demand prices, region us-central1: $")
    nothing = _plan("existing-mi300").cost
    assert nothing is not None and not nothing.lines
    assert headline(nothing) == (
        "No total (no region (pricing.region unset)): nothing this stack pays for is priced (1 item below, each with"
        " what prices it)."
    )
    assert not any("$0.00/hour" in line for line in cost_lines(nothing))


def test_a_machine_type_of_another_accelerator_is_refused() -> None:
    """existing-mi300's pool carries amd, 8 per node: an H100 machine type does not price it."""
    with pytest.raises(ConfigError) as caught:
        _plan("existing-mi300", ("pricing.machine_types={mi300: p5.48xlarge}",))
    assert str(caught.value).endswith(
        "pricing.machine_types.mi300 = 'p5.48xlarge': is a gpu machine (8 devices per node), while node pool mi300"
        " carries amd: name the machine type its nodes are"
    )
    # a machine type the catalog does not describe is priced by pricing.prices alone
    named = ("pricing.machine_types={mi300: nd-mi300x-v5}", "pricing.prices={nd-mi300x-v5: 60}")
    cost = _plan("existing-mi300", named).cost
    assert cost is not None and [line.usd_per_hour for line in cost.lines] == [60.0]


def test_a_created_cluster_refuses_the_existing_cluster_pricing_keys() -> None:
    with pytest.raises(ConfigError) as caught:
        _plan("gke-h100-lustre", ("pricing.region=europe-west4",))
    assert "pricing.region = 'europe-west4': GKE creates this cluster in us-central1 (cluster.gke.region)" in str(
        caught.value
    )
    with pytest.raises(ConfigError) as caught:
        _plan("gke-h100-lustre", ("pricing.machine_types={h100: a3-highgpu-8g}",))
    assert "applies only with cluster.provider existing" in str(caught.value)


def test_no_per_token_price_for_a_replica_count_the_plan_refuses() -> None:
    """The same workload at 60 requests/s against the two replicas eks-h100-efs runs: the plan refuses the count
    (render stops; `./run size` reports), so the cost gives no $ per million prompt tokens and says why; at 4
    requests/s the replica keeps up and the price is given (test_efs_throughput_... above)."""
    heavy = [x.replace("request_rate=4", "request_rate=60").replace("duration=120", "duration=10") for x in SHARED]
    config = loading.load_named("eks-h100-efs", heavy)
    with pytest.raises(ConfigError):
        plan(config)
    stack_plan = plan(config, keep_up=False)
    cost, capacity = stack_plan.cost, stack_plan.capacity
    assert cost is not None and capacity is not None and not capacity.configured.fits
    assert not cost.unpriced  # priced in full: the refusal alone withholds the per-token price
    assert cost.usd_per_million_prompt_tokens is None
    assert cost.refused is not None and cost.refused.startswith("the plan refuses 2 replicas: ")
    assert any(line.startswith("- no $ per million prompt tokens at the workload's") for line in cost_lines(cost))
