"""The filesystem tier replayed at the size it is billed for, against its backend's limits, in the mode it runs and
beside its other mode; a provisioned mode rendered at its derived throughput; the mandatory rule on the stamp."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from components.catalog import labels
from components.units import GiB, MiB
from policies.checks.storage_limits import NAMESPACE_TYPE, StorageLimitsConfig, filesystem_tier_within_limits
from policies.resources import Resource
from stacks.__main__ import size_lines
from stacks.config import loading
from stacks.config.cluster_facts import StorageFacts
from stacks.config.cluster_outputs import describe, storage_section
from stacks.config.errors import ConfigError
from stacks.planning.cluster_plan import plan_cluster
from stacks.planning.plan import StackPlan, plan
from stacks.review import offline

ROOT = Path(__file__).resolve().parents[1]
CONVERSATION = ROOT / "tests/fixtures/workloads/mooncake-conversation/conversation_trace_40k.jsonl"
SHARED = (  # a small shared-prefix workload: replayed in a second
    "workload.shared_prefix.num_groups=20",
    "workload.shared_prefix.num_prompts_per_group=10",
    "workload.shared_prefix.system_prompt_len=4096",
    "workload.shared_prefix.question_len=512",
    "workload.shared_prefix.output_len=64",
    "workload.shared_prefix.request_rate=4",
    "workload.shared_prefix.duration=120",
    "workload.block_tokens=512",
)


@functools.cache
def _plan(name: str, overrides: tuple[str, ...] = ()) -> StackPlan:
    return plan(loading.load_named(name, list(overrides)))


def _replayed_and_priced(stack_plan: StackPlan) -> tuple[int, int]:
    curve, shared = stack_plan.tier_curve, stack_plan.shared_tier
    assert curve is not None and shared is not None
    return curve.fs_sizes[curve.configured[1]].bytes, shared.capacity.capacity_bytes


@pytest.mark.parametrize(
    ("name", "overrides", "held"),
    [
        ("eks-h100-efs", (), 9000 * GiB),  # the evictor's default budget, not the claim's nominal 5 GiB
        ("eks-h100-efs", ("storage.evictor.budget=2000Gi",), 2000 * GiB),
        ("eks-h100-efs", ("storage.evictor.mode=off",), 9000 * GiB),  # nothing evicts: the budget it is held to
        ("gke-h100-lustre", (), 9000 * GiB),  # not elastic: the claim
    ],
)
def test_the_tier_is_replayed_at_the_size_it_is_priced_at(name: str, overrides: tuple[str, ...], held: int) -> None:
    stack_plan = _plan(name, (*SHARED, *overrides))
    assert _replayed_and_priced(stack_plan) == (held, held)
    cost = stack_plan.cost
    assert cost is not None
    storage = [line for line in cost.lines if line.category == "storage"]
    if name == "eks-h100-efs":  # billed for what it holds of that size: up to the high watermark (or all of it)
        shared = stack_plan.shared_tier
        assert shared is not None
        share = shared.capacity.high if shared.managed else 1
        assert f"{held * share / 1e9:,.0f} GB held" in storage[0].what


@functools.cache
def _conversation(*overrides: str) -> str:
    return "\n".join(size_lines("eks-h100-efs", list(overrides), str(CONVERSATION), None))


def test_eks_h100_efs_on_the_conversation_trace_says_its_tier_will_throttle() -> None:
    """Replayed at its 9,000 GiB budget the tier writes about 5.6 GB/s: past EFS Elastic's 5 GiBps per file system
    in us-east-1 and five times the 1,500 MiBps one client carries (both pods on the one node)."""
    text = _conversation()
    assert "| filesystem tier held (`storage.size`; elastic: `storage.evictor.budget`)" in text
    assert "| 8.79 TiB (configured) |" in text  # 9000 GiB, the budget
    assert "**The EFS tier will throttle** (Elastic)" in text
    verdict = next(line for line in text.splitlines() if line.startswith("**The EFS tier will throttle**"))
    assert "writes per file system" in verdict and "per client (2 pods on one node share its client)" in verdict
    assert "EFS throughput is priced in Elastic mode (storage.efs.throughput_mode)" in text
    [elastic] = [line for line in text.splitlines() if line.startswith("| Elastic (priced) |")]
    [provisioned] = [line for line in text.splitlines() if line.startswith("| Provisioned |")]
    assert "throttles" in elastic and "3,409 MiB/s" in provisioned  # its cap in us-east-1, 3.33 GiBps
    # provisioned at its cap: 3,409 MiB/s of writes, three times that of reads, $6 per MiB/s-month
    assert "reads 10.72 GB/s, writes 3.57 GB/s per file system; 0.52 GB/s per client | $28.02 |" in provisioned


def test_a_small_workload_is_within_the_limits_and_stamped() -> None:
    stack_plan = _plan("eks-h100-efs", SHARED)
    assert stack_plan.cost is not None and stack_plan.cost.throughput is not None
    running = stack_plan.cost.throughput.running
    assert running.mode.key == "elastic" and running.throttled() == []
    stamp = json.loads(stack_plan.namespace_annotations[labels.FILESYSTEM_THROUGHPUT_ANNOTATION])
    assert (stamp["backend"], stamp["mode"]) == ("aws-efs", "elastic")
    assert [row["what"] for row in stamp["limits"]] == [
        "reads per file system",
        "writes per file system",
        "reads and writes per client (2 pods on one node share its client)",
    ]
    assert [row["limit"] for row in stamp["limits"]] == [60 * GiB, 5 * GiB, 1500 * MiB]


def test_without_a_workload_the_upper_bound_is_compared_not_stamped() -> None:
    stack_plan = _plan("eks-h100-efs")
    assert stack_plan.cost is not None and stack_plan.cost.throughput is not None
    assert stack_plan.cost.throughput.demand is not None and not stack_plan.cost.throughput.demand.measured
    assert labels.FILESYSTEM_THROUGHPUT_ANNOTATION not in stack_plan.namespace_annotations


def _efs_file_system(stack_plan: StackPlan) -> dict[str, Any]:
    recording = offline.record(stack_plan, "eks-h100-efs")
    [fs] = [r for r in recording.resources if r.type == "aws:efs/fileSystem:FileSystem"]
    return dict(fs.inputs)


def test_provisioned_renders_the_derived_throughput_and_prices_it_per_mib_s_month() -> None:
    stack_plan = _plan("eks-h100-efs", (*SHARED, "storage.efs.throughput_mode=provisioned"))
    assert stack_plan.cost is not None and stack_plan.cost.throughput is not None
    throughput = stack_plan.cost.throughput
    demand = throughput.demand
    assert demand is not None and demand.read is not None
    need = max(demand.write, demand.read / 3) / MiB
    assert stack_plan.provisioned_mibps == max(1, -(-need // 1))
    fs = _efs_file_system(stack_plan)
    assert (fs["throughputMode"], fs["provisionedThroughputInMibps"]) == ("provisioned", stack_plan.provisioned_mibps)
    [line] = [x for x in stack_plan.cost.lines if x.price.item == "efs-provisioned"]
    assert line.usd_per_hour == pytest.approx(stack_plan.provisioned_mibps * 6.0 / 730)
    assert not [x for x in stack_plan.cost.lines if x.price.item in ("efs-read", "efs-write")]  # not per GB
    [elastic] = throughput.others
    assert elastic.mode.key == "elastic"


def test_elastic_renders_without_a_provisioned_throughput() -> None:
    fs = _efs_file_system(_plan("eks-h100-efs"))
    assert fs["throughputMode"] == "elastic" and "provisionedThroughputInMibps" not in fs


def test_a_configured_provisioned_throughput_is_rendered_as_set() -> None:
    stack_plan = _plan("eks-h100-efs", ("storage.efs.throughput_mode=provisioned", "storage.efs.provisioned_mibps=250"))
    assert _efs_file_system(stack_plan)["provisionedThroughputInMibps"] == 250


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ("storage.efs.throughput_mode=provisioned",),
            "storage.efs.provisioned_mibps = None: throughput_mode provisioned needs its MiB/s: set it, or a workload",
        ),
        (
            ("storage.efs.provisioned_mibps=100",),
            "storage.efs.provisioned_mibps = 100: applies only with storage.efs.throughput_mode provisioned",
        ),
    ],
)
def test_a_provisioned_throughput_is_asked_for_where_nothing_derives_it(
    overrides: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_named("eks-h100-efs", list(overrides)))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_efs_settings_belong_to_efs() -> None:
    with pytest.raises(ConfigError, match=r"storage.efs = '\(set\)': applies only with storage.backend aws-efs"):
        loading.load_named("gke-h100-lustre", ["storage.efs.throughput_mode=provisioned"])


def _namespace(stamp: str | None) -> Resource:
    annotations = {labels.FILESYSTEM_THROUGHPUT_ANNOTATION: stamp} if stamp is not None else {}
    return Resource(NAMESPACE_TYPE, "llmd-namespace", {"metadata": {"name": "ns", "annotations": annotations}})


def _stamp(demand: float, limit: float) -> str:
    row = {"what": "writes per file system", "demand": demand, "limit": limit, "source": "EFS quotas"}
    return json.dumps({"backend": "aws-efs", "mode": "elastic", "limits": [row]})


def test_the_rule_refuses_a_rate_past_its_limit_by_more_than_the_share() -> None:
    config = StorageLimitsConfig()  # 10%
    assert filesystem_tier_within_limits([_namespace(_stamp(110, 100))], config) == []  # at the share: passes
    [violation] = filesystem_tier_within_limits([_namespace(_stamp(111, 100))], config)
    assert "will throttle: writes per file system" in violation.message and "(111%; EFS quotas)" in violation.message
    assert filesystem_tier_within_limits([_namespace(_stamp(101, 100))], StorageLimitsConfig(0.0)) != []
    assert filesystem_tier_within_limits([_namespace(_stamp(100, 100))], StorageLimitsConfig(0.0)) == []


@pytest.mark.parametrize("stamp", ["not json", '{"limits": [{"demand": "NaN", "limit": 1}]}', _stamp(1, 0)])
def test_the_rule_reports_a_stamp_it_cannot_judge(stamp: str) -> None:
    [violation] = filesystem_tier_within_limits([_namespace(stamp)], StorageLimitsConfig())
    assert "not rows of two numbers" in violation.message


def test_the_rule_judges_nothing_without_a_stamp() -> None:
    assert filesystem_tier_within_limits([_namespace(None)], StorageLimitsConfig()) == []


CLUSTER_STACK: dict[str, Any] = {
    "layer": "cluster",
    "cluster": {
        "provider": "eks",
        "name": "c1",
        "eks": {
            "region": "us-east-1",
            "availability_zones": ["us-east-1a", "us-east-1b"],
            "account_id": "123456789012",
        },
    },
    "node_pools": {"h100": {"machine_type": "p5.48xlarge"}},
    "storage": {"backend": "aws-efs", "efs": {"throughput_mode": "provisioned", "provisioned_mibps": 300}},
}


def test_a_cluster_stack_s_provisioned_efs_is_its_bill_and_its_serving_stacks_mode() -> None:
    """The cluster stack pays what is provisioned (300 MiB/s x $6 / 730 h); its serving stacks read the mode and
    the figure from its outputs, into their own storage.efs."""
    config = loading.build(None, CLUSTER_STACK)
    cost = plan_cluster(config, "c1").cost
    assert cost is not None
    [line] = [x for x in cost.lines if x.price.item == "efs-provisioned"]
    assert line.usd_per_hour == pytest.approx(300 * 6.0 / 730)
    outputs = describe(config, "c1")
    assert outputs.storage is not None
    assert (outputs.storage.throughput_mode, outputs.storage.provisioned_mibps) == ("provisioned", 300)
    assert storage_section(outputs) == {
        "backend": "aws-efs",
        "size": "9000Gi",
        "efs": {"throughput_mode": "provisioned", "provisioned_mibps": 300},
    }


def test_a_cluster_stack_names_its_provisioned_throughput() -> None:
    unset = {**CLUSTER_STACK, "storage": {"backend": "aws-efs", "efs": {"throughput_mode": "provisioned"}}}
    with pytest.raises(ConfigError, match=r"storage\.efs\.provisioned_mibps = None: throughput_mode provisioned needs"):
        loading.build(None, unset)


def test_the_cluster_outputs_refuse_a_mode_the_backend_does_not_have() -> None:
    with pytest.raises(ValueError, match="throughput_mode = 'bursting': backend aws-efs has elastic or provisioned"):
        StorageFacts(backend="aws-efs", storage_class="efs-sc", size="9000Gi", throughput_mode="bursting")
