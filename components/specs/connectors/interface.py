"""What every connector implementation answers: one typed interface (`Connector`), with neutral defaults,
and the plain records the stack passes in (the specs never read `StackConfig`). It imports records only; what
the vLLM connectors share (their manifests, argument layout, the shared tier's volumes) is `vllm_family.py`.

A connector is what moves KV between the accelerator and the tiers below it; here it also decides what
follows from it: the tier's sizing, the model server's kv-transfer config, env, volumes and devices,
the image, the router profile, the metrics the stack exports and the monitors, the per-node daemons and
their workloads, the shared claim, and the checks that need it. `components/specs/connectors/__init__.py`
resolves the one a stack runs from its config's Literals.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from components.catalog import labels
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.catalog.startup_figures import SizedImage
from components.formulas.tier_shape import Relation, Scope
from components.manifest import Manifest
from components.specs.disaggregation import Disaggregation
from components.specs.kv_events import TierEvents, refusal
from components.specs.lmcache import LMCacheSettings
from components.specs.metric_family import MetricFamily
from components.specs.network import Peer
from components.specs.servers.base import EngineKey as EngineKey  # the config's Literals, named here too
from components.specs.servers.base import GuideLimits, ServerSpec
from components.specs.servers.base import HostType as HostType
from components.specs.servers.base import Variant as Variant
from components.specs.sizing import TierSizing
from components.specs.startup import ColdStart
from components.specs.workloads import Workload
from components.units import ByteSize, GiB

FILES_STORAGE = labels.FILES_STORAGE_MOUNT

RouterProfile = Literal["tiered", "pd", "pd-tiered", "token-routing", "default", "precise"]
Problem = tuple[str, object, str]  # a config field, its value and what is wrong (stacks raises it)


@dataclass(frozen=True)
class Choice:
    """What the stack chose, resolved to catalog records: everything a connector's decisions read."""

    accelerator: AcceleratorProfile
    server: EngineKey
    variant: Variant
    host_type: HostType
    lmcache: LMCacheSettings
    precise: bool = False  # router.prefix_routing precise: the engines publish their KV-cache events
    disaggregation: Disaggregation | None = None  # P/D: the two pools and the handoff (None: one pool)

    @property
    def filesystem_tier(self) -> bool:
        return self.variant == "fs"


@dataclass(frozen=True)
class SizingInputs:
    model: ModelSpec
    accelerator: AcceleratorProfile
    tensor_parallelism: int
    replicas: int
    tier: ByteSize  # the CPU tier per pod
    disk: ByteSize | None  # the filesystem tier's capacity budget, where the connector takes one
    variant: Variant
    hosts: int  # pods per replica


@dataclass(frozen=True)
class DaemonInputs:
    """What the per-node daemons' workloads are built from (the plan fills it)."""

    choice: Choice
    namespace: str
    sizing: TierSizing  # the connector's own sizes within (`sizing.sizes_of`)
    nodes: int  # nodes a per-node daemon rolls over
    cold_start: Callable[[str, int], ColdStart]  # a daemon's cold start: (image, bytes it pins)
    tier_namespace: str | None = None  # the persistent tier's namespace (components/specs/tier_namespace.py)


class Connector:
    """One connector implementation. Subclasses override what differs from these defaults."""

    key: ClassVar[str]  # the implementation's name (not always the config's `cache.connector`)
    engine: ClassVar[EngineKey] = "vllm"
    weight_streaming: ClassVar[bool] = False  # its engine loads weights with the Run:ai streamer (where the image can)
    metric_families: ClassVar[tuple[MetricFamily, ...]] = ()  # the connector's own (its module defines them)
    # Images pinned in its module rather than in versions.py, with their sizes (what `image` or its daemons run).
    own_images: ClassVar[tuple[SizedImage, ...]] = ()
    # The verification Job's gate: a key of GATES in components/verification/verify_offload.py (the script runs
    # in the Job's pod and imports nothing of ours; tests/test_verify_script.py holds every connector's to it).
    verification_check: ClassVar[str] = "external"
    peer_traffic: ClassVar[bool] = False  # model-server pods talk to each other (besides P/D and multi-host)
    reads_lmcache_section: ClassVar[bool] = False  # the config's `lmcache` section applies
    disaggregates: ClassVar[bool] = False  # runs `cache.disaggregation` (P/D with its tier on the prefill pods)
    # What a pod that runs it shows (the policy rule `identity-labels` holds a pod's `llm-d.ai/kv-connector` label
    # to it): the `kv_connector` class its kv-transfer config names, or, for an engine's own cache (no
    # kv-transfer config), the engine flag that turns it on.
    kv_connector_class: ClassVar[str | None] = None
    engine_flag: ClassVar[str | None] = None
    # Its engine's gauge of the HBM KV pool in use, 0..1 per pod (the token-aware variant's decode trigger).
    kv_usage_metric: ClassVar[str] = "vllm:kv_cache_usage_perc"
    # How its engine is told the KV block size, and the `--kv-events-config` field that turns its events on (vLLM's
    # KVEventsConfig `enable_kv_cache_events`; None: the config's presence, SGLang's): what the policy pack reads.
    block_flag: ClassVar[str] = "--block-size"
    kv_events_switch: ClassVar[str | None] = "enable_kv_cache_events"
    # How the tier replay (components/formulas/tier_replay.py) models its CPU tier: `inclusive` when it
    # stores every block as it is computed (a copy of what HBM holds: vLLM's OffloadingConnector, LMCache,
    # HiCache under the write_through policy the guide sets, the TPU offload connector), `exclusive` when it
    # takes only HBM's evictions; `replica` when each pod has its own, `pooled` when every pod loads from one.
    tier_relation: ClassVar[Relation] = "inclusive"
    cpu_scope: ClassVar[Scope] = "replica"

    def __repr__(self) -> str:
        return f"<connector {self.key}>"

    # Which combinations it runs: components/catalog/support.py's table is the source (the registry's
    # `combinations(connector)` reads it back per implementation).

    # -- sizing ----------------------------------------------------------------------------------------
    def size(self, inputs: SizingInputs) -> TierSizing:
        """The pod's sizes, with the connector's own as a typed `Sizes` record of its module."""
        raise NotImplementedError

    def segment_ranks(self, tensor_parallelism: int, variant: Variant) -> int | None:
        """Ranks the tier is split into whole-GiB segments over (None: the tier is not split)."""
        return None

    def auto_tier_step(self, tensor_parallelism: int, variant: Variant) -> ByteSize:
        """The step `cache.tier.cpu: auto` searches in."""
        return ByteSize(GiB) * (self.segment_ranks(tensor_parallelism, variant) or 1)

    def per_node_memory(self, sizing: TierSizing) -> ByteSize:
        """Memory the connector's per-node daemon takes beside the model servers on each node."""
        return ByteSize(0)

    def pod_cpu_tier(self, sizing: TierSizing, hosts: int) -> ByteSize:
        """Bytes of the CPU tier one model-server pod holds in its own memory, the connector's own figure (from
        its `Sizes`; 0 where a per-node daemon holds the tier); the plan stamps it on the workload
        (`labels.CPU_TIER_BYTES_ANNOTATION`, `ServerSpec.cpu_tier_bytes`). `hosts`: pods per replica."""
        raise NotImplementedError

    def uses_tier_claim(self, variant: Variant) -> bool:
        """The filesystem tier on the shared ReadWriteMany claim."""
        return variant == "fs"

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        """Tokens per block the CPU tier moves to the accelerator, and what sets it."""
        return choice.accelerator.kv_block_tokens, "vLLM KV block"

    def engine_block(self, choice: Choice) -> int:
        """Tokens per KV block of the engine's HBM cache (vLLM's `--block-size`): what precise routing hashes in."""
        return choice.accelerator.kv_block_tokens

    def kv_events(self, filesystem_tier: bool) -> tuple[TierEvents, ...]:
        """What its engine publishes about each tier the stack has (HBM, CPU, and the filesystem tier with the
        `fs` variant), read from the engines' sources at their pinned versions; precise routing needs every
        tier's stores and evictions (`precise_refusal`). Empty: none recorded, which refuses it too."""
        return ()

    def precise_refusal(self, filesystem_tier: bool) -> str | None:
        """The one line refusing precise routing over it (None: every tier's stores and evictions are reported)."""
        return refusal(self.key, self.kv_events(filesystem_tier))

    # -- the model servers -----------------------------------------------------------------------------
    def roles(self, choice: Choice) -> int:
        """Model-server roles (2: prefill and decode)."""
        return 1

    def disaggregated(self, choice: Choice) -> bool:
        return self.roles(choice) == 2

    def guide(self, choice: Choice) -> str:
        """The `llm-d.ai/guide` label the router selects."""
        return labels.GUIDE

    def image(self, choice: Choice) -> str:
        """The accelerator's vLLM image; under precise routing, the one its precise guide pins where it differs."""
        precise = choice.accelerator.precise_vllm_image
        return precise if choice.precise and precise is not None else choice.accelerator.vllm_image

    def router_profile(self, choice: Choice, replicas: int) -> RouterProfile:
        return "tiered"

    def pod_labels(self, accelerator: AcceleratorProfile) -> dict[str, str]:
        return {}

    def manifests(self, spec: ServerSpec) -> list[Manifest]:
        """One model-server role's objects (before hardening): its family's builder."""
        raise NotImplementedError

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        raise NotImplementedError

    def kv_transfer_flag(self, spec: ServerSpec) -> str:
        return to_json(self.kv_transfer_config(spec))

    def guide_limits(self, spec: ServerSpec) -> GuideLimits:
        """The device-memory share and context its guide's flags write (none: the stack's or the engine's)."""
        return GuideLimits()

    def vllm_args(self, spec: ServerSpec, model: list[str], tp: str, kv: list[str]) -> list[str]:
        """vLLM's arguments around the model, tensor parallelism and kv-transfer flags (the vLLM family's)."""
        raise NotImplementedError

    def sglang_args(self, spec: ServerSpec, engine: list[str], limits: list[str]) -> list[str]:
        """SGLang's arguments around its own flags and its context and memory limits (the SGLang family's)."""
        raise NotImplementedError

    def command(self, spec: ServerSpec, args: list[str]) -> tuple[list[str], list[str]]:
        return ["vllm", "serve"], args

    def env(self, spec: ServerSpec) -> list[Manifest]:
        return []

    def volumes(self, spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
        """Volumes and mounts the connector adds to the pod's own."""
        return [], []

    def devices(self, spec: ServerSpec) -> Manifest:
        """Extended resources besides the accelerator's."""
        return {}

    def extra_manifests(self, spec: ServerSpec) -> list[Manifest]:
        """Objects beside the model-server workload (a ConfigMap it reads)."""
        return []

    # -- the rest of the stack -------------------------------------------------------------------------
    def exports(self, choice: Choice, profile: RouterProfile) -> tuple[MetricFamily, ...]:
        """The metric families its pods export, in rank order (metric_family.in_order)."""
        return self.metric_families

    def verifies_shared_tier(self, choice: Choice) -> bool:
        """The verification Job also checks that a second pod loads what the first stored on the shared tier."""
        return False

    def monitors(self, provider: str, namespace: str) -> list[Manifest]:
        """Scrape objects for the connector's own daemons."""
        return []

    def server_peers(self) -> tuple[Peer, ...]:
        """Pods of the connector's daemons that the model servers' NetworkPolicy admits."""
        return ()

    def daemons(self, inputs: DaemonInputs) -> list[Workload]:
        """The connector's own workloads (per-node daemons and what they need)."""
        return []

    def summary_rows(self, choice: Choice, sizing: TierSizing) -> list[tuple[str, str]]:
        """The render summary's rows for the connector's own daemons (after the model servers' roles)."""
        return []

    def settings_problem(self, choice: Choice) -> Problem | None:
        """A cross-field check of the connector's own settings."""
        return None


def to_json(config: dict[str, Any]) -> str:
    """Compact JSON, as upstream writes it on the command line."""
    return json.dumps(config, separators=(",", ":"))
