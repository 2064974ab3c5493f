"""The storage backends' documented limits (components/catalog/storage_backends.py) and the tier against them
(stacks/planning/workload/tier_throughput.py): each figure written out here from the AWS and GCP pages the records cite,
each decision at its boundary from both sides."""

from __future__ import annotations

import pytest

from components.catalog.storage_backends import (
    AWS_EFS,
    EFS_ELASTIC,
    EFS_PROVISIONED,
    GCP_LUSTRE,
    STORAGE_BACKENDS,
    Provisioning,
)
from components.units import GiB, MiB
from stacks.planning.workload.cost_records import Against, Demand, ModeLimits
from stacks.planning.workload.tier_throughput import provisioned_for

US_EAST_1 = Provisioning("us-east-1", 9000 * GiB, None, None, None)
LONDON = Provisioning("eu-west-2", 9000 * GiB, None, None, None)
UNKNOWN = Provisioning(None, 9000 * GiB, None, None, None)


def test_efs_elastic_limits_are_the_quota_page_s_by_region() -> None:
    """EFS quotas: Regional Elastic per file system, 60 GiBps read and 5 GiBps write in us-east-1 (and six other
    Regions), 10 and 1 elsewhere; a region not known takes the lower; 1,500 MiBps per client (performance page)."""
    assert (EFS_ELASTIC.file_system(US_EAST_1).read, EFS_ELASTIC.file_system(US_EAST_1).write) == (60 * GiB, 5 * GiB)
    assert (EFS_ELASTIC.file_system(LONDON).read, EFS_ELASTIC.file_system(LONDON).write) == (10 * GiB, 1 * GiB)
    assert (EFS_ELASTIC.file_system(UNKNOWN).read, EFS_ELASTIC.file_system(UNKNOWN).write) == (10 * GiB, 1 * GiB)
    assert "(us-east-1)" in EFS_ELASTIC.file_system(US_EAST_1).source
    assert "docs.aws.amazon.com/efs/latest/ug/limits.html" in EFS_ELASTIC.file_system(US_EAST_1).source
    assert EFS_ELASTIC.per_client is not None and EFS_ELASTIC.per_client.value == 1500 * MiB


def test_efs_provisioned_carries_three_times_its_throughput_in_reads_up_to_the_region_s_cap() -> None:
    """Provisioned: reads metered at a third; per file system at most 10 GiBps read, 3.33 GiBps write in us-east-1
    (3 and 1 elsewhere); 500 MiBps per client."""
    at = EFS_PROVISIONED.file_system
    provisioned = Provisioning("us-east-1", 0, None, None, 1000 * MiB)
    assert (at(provisioned).read, at(provisioned).write) == (3000 * MiB, 1000 * MiB)
    over = Provisioning("us-east-1", 0, None, None, 4000 * MiB)
    assert (at(over).read, at(over).write) == (10 * GiB, 3.33 * GiB)
    elsewhere = Provisioning("eu-west-2", 0, None, None, 4000 * MiB)
    assert (at(elsewhere).read, at(elsewhere).write) == (3 * GiB, 1 * GiB)
    assert EFS_PROVISIONED.per_client is not None and EFS_PROVISIONED.per_client.value == 500 * MiB


def test_managed_lustre_scales_with_its_tier_and_capacity() -> None:
    """1000 MB/s per TiB x 9000 GiB (8.79 TiB) = 8.789 GB/s, read and write; no per-client limit published."""
    mode = GCP_LUSTRE.default_mode
    limits = mode.file_system(Provisioning("us-central1", 9000 * GiB, 1000, None, None))
    assert limits.read == limits.write == pytest.approx(1000e6 * 9000 / 1024)
    assert mode.per_client is None


def test_each_backend_says_what_the_config_and_the_evictor_read_of_it() -> None:
    expected = {  # key: (created on, class, evictor timestamp, usage source, default budget, settings)
        "existing": (None, None, "atime", "statvfs", None, None),
        "gcp-lustre": ("gke", "lustre-class", "atime", "statvfs", None, "lustre"),
        "aws-efs": ("eks", "efs-sc", "mtime", "scan", 9000 * GiB, "efs"),
    }
    for key, facts in expected.items():
        b = STORAGE_BACKENDS[key]
        assert (b.created_on, b.storage_class, b.evictor_timestamp, b.evictor_usage, b.default_budget, b.settings) == (
            facts
        ), key
    assert list(AWS_EFS.modes) == ["elastic", "provisioned"]  # the default first


def _demand(read: float, write: float, pods: int = 2, clients: int = 1) -> Demand:
    return Demand(read, write, pods, clients, True, "test")


@pytest.mark.parametrize(
    ("write", "read", "mibps"),
    [
        (100 * MiB, 0.0, 100),  # exactly whole MiB/s: no more
        (100 * MiB + 1, 0.0, 101),  # a byte over: the next MiB/s
        (100 * MiB, 600 * MiB, 200),  # reads at a third need more than the writes
        (0.0, 0.0, 1),  # at least 1 MiB/s (the API's minimum)
        (9 * GiB, 0.0, 3409),  # at most the region's cap, 3.33 GiBps in whole MiB/s
    ],
)
def test_a_provisioned_throughput_is_derived_from_the_demand(write: float, read: float, mibps: int) -> None:
    provisioned = provisioned_for(EFS_PROVISIONED, _demand(read, write), "us-east-1")
    assert provisioned == mibps * MiB


def test_a_provisioned_throughput_is_not_derived_from_an_upper_bound_or_for_elastic() -> None:
    upper = Demand(None, 100 * MiB, 2, 1, False, "upper bound")
    assert provisioned_for(EFS_PROVISIONED, upper, "us-east-1") is None
    assert provisioned_for(EFS_ELASTIC, _demand(0.0, 100 * MiB), "us-east-1") is None


def test_the_busiest_node_s_client_carries_its_pods_share() -> None:
    assert _demand(1.0, 3.0, pods=2, clients=1).per_client == 4.0  # both pods on one node
    assert _demand(1.0, 3.0, pods=2, clients=2).per_client == 2.0  # one each
    assert _demand(1.5, 4.5, pods=3, clients=2).per_client == 4.0  # 2 of 3 pods share the busiest
    assert _demand(1.5, 4.5, pods=3, clients=2).pods_per_client == 2


def test_a_rate_at_its_limit_is_within_it_and_a_byte_over_is_not() -> None:
    assert not Against("writes", 5 * GiB, 5 * GiB, "s").over
    assert Against("writes", 5 * GiB + 1, 5 * GiB, "s").over


def test_what_can_move_is_the_demand_capped_by_the_file_system_and_the_clients() -> None:
    fs = EFS_ELASTIC.file_system(US_EAST_1)
    limits = ModeLimits(EFS_ELASTIC, fs, None, ())
    assert limits.moved(_demand(0.1 * GiB, 0.3 * GiB, pods=4, clients=4)) == (0.1 * GiB, 0.3 * GiB)  # within
    # one node's client carries 1,500 MiBps: 0.5 + 1.5 GiB/s scaled to it, in the same proportion
    read, write = limits.moved(_demand(0.5 * GiB, 1.5 * GiB, pods=2, clients=1))
    assert read + write == pytest.approx(1500 * MiB) and write / read == pytest.approx(3.0)
    # twenty nodes carry 30,000 MiBps: the 5 GiBps write limit binds first
    assert limits.moved(_demand(0.0, 8 * GiB, pods=20, clients=20)) == (0.0, 5 * GiB)
