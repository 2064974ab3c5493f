"""What every cluster provider (`cluster.provider`) answers, as one record: whether it creates the cluster and
its pools, the cloud's limits on names and node labels, the storage it creates, its registry mirror, what a
cluster stack on it exports, and its summary rows. Each provider is one module of this package on this record;
the registry (`__init__.py`) resolves the stack's. The Pulumi side of a created cluster
is its cloud's side one floor up (`stacks/deploy/gke_side.py`, `eks_side.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stacks.config import StackConfig
from stacks.config.cluster_facts import MirrorFacts
from stacks.config.provider_kinds import ProviderKind


def _no_mirror(config: StackConfig, registries: set[str]) -> MirrorFacts | None:
    return None


def _always(config: StackConfig) -> bool:
    return True


@dataclass(frozen=True)
class Extra:
    """Something a created cluster pays for by the hour besides its pools, fee and storage, under its own price key
    (the catalog has no row for it yet, so the cost names it unpriced until `pricing.prices.<item>` prices it)."""

    what: str  # as the cost names it
    item: str  # its `pricing.prices` key, USD per hour of one
    count: int  # how many the cluster has (gateways, nodes)
    why: str  # what the cloud bills it by


@dataclass(frozen=True)
class ClusterBill:
    """What a created cluster costs besides its node pools: where it is priced, its management fee and its
    system pool (components/catalog/prices.py keys), what else it pays for by the hour, and what it pays for by use
    (per GB passed or stored), which the plan does not model and the cost names."""

    region: str
    fee: str  # the management fee's price key, per cluster-hour
    system_machine: str
    system_nodes: int
    system_count: str  # how `system_nodes` is counted, for the summary
    extras: tuple[Extra, ...] = ()
    usage: tuple[str, ...] = ()  # billed by use: what and by what


def cluster_nodes(config: StackConfig, system_nodes: int) -> int:
    """Every node a created cluster starts with: its pools' (each slice's hosts) and the system pool's."""
    return system_nodes + sum(pool.node_count * pool.slices for pool in config.node_pools.values())


def _unbilled(config: StackConfig) -> ClusterBill | None:
    return None


@dataclass(frozen=True)
class ClusterProvider:
    kind: ProviderKind  # its key, default platform and layer, and its mirror's cloud (what the config model reads)
    creates: bool  # creates the cluster and its pools (else its pools are described, not created)
    title: str = ""  # how messages name it (default: its key)
    takes_kubeconfig: bool = False  # reached through `cluster.kubeconfig` and `cluster.context`
    describes_pools: bool = False  # the stack's `node_pools` describe what is there (not a cluster stack's)
    settings: str | None = None  # the `cluster.<key>` section a created cluster is set up with
    name_limit: int | None = None  # cloud-side node pool names (and the system pool's)
    cluster_name_limit: int | None = None  # cloud-side cluster name, where it is tighter than the pools'
    # Label prefixes a created pool's nodes cannot carry: Kubernetes' own (NodeRestriction keeps kubelets from
    # setting them) and the cloud's.
    reserved_label_prefixes: tuple[str, ...] = ()
    reservation: Callable[[str], str] | None = None  # the format check of a pool's capacity reservation
    storage_backends: tuple[str, ...] = ()  # `storage.backend`s it creates (besides `existing`)
    network_policy_enforcer: str | None = None  # what enforces NetworkPolicies on a cluster it creates
    image_streaming: bool = False  # its created pools stream images from its mirror (GKE: Artifact Registry)
    proxy_subnet: bool = False  # its Gateway's load balancer proxies come from a proxy-only subnet
    ecr_credentials: bool = False  # takes `images.ecr_credentials` (ECR pull-through rules)
    # The registry mirror a created cluster gets for these registries (None: pulled from upstream).
    mirror: Callable[[StackConfig, set[str]], MirrorFacts | None] = _no_mirror
    bill: Callable[[StackConfig], ClusterBill | None] = _unbilled  # a created cluster's own charges
    # Whether a cluster stack on it exports a kubeconfig (else its serving stacks use the ambient one).
    exports_kubeconfig: Callable[[StackConfig], bool] = _always
    # The summary's image source without a mirror.
    unmirrored: Callable[[StackConfig], str] = lambda config: (
        "from the upstream registries, pulled whole by each node"
        f" (no mirror for `cluster.provider: {config.cluster.provider}`)"
    )

    @property
    def key(self) -> str:
        """The config's `cluster.provider`."""
        return self.kind.key

    @property
    def reads_cluster_stack(self) -> bool:
        return self.kind.reads_cluster_stack

    @property
    def platform(self) -> str | None:
        """The only `cluster.platform` it runs (None: any)."""
        return self.kind.platform if self.kind.platform_fixed else None

    @property
    def name(self) -> str:
        return self.title or self.key

    def reserved_label(self, key: str) -> bool:
        prefix = key.rpartition("/")[0]
        return any(prefix == p or prefix.endswith(f".{p}") for p in self.reserved_label_prefixes)
