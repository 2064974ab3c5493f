"""Every rule of the pack, in the order the pack and `stacks check` run them: its name, description,
enforcement level, check and its config type (one row each; the checks live in the modules by concern)."""

from __future__ import annotations

from typing import Any

from policies.checks.artifacts import (
    ChartRegistriesConfig,
    ImagesPinnedConfig,
    charts_from_allowed_registries,
    image_prepull,
    images_pinned,
    weights_fetched_once,
)
from policies.checks.budget import BudgetConfig, DefaultBudgetConfig, monthly_budget, monthly_budget_default
from policies.checks.cache_tiers import (
    PrefixCachingConfig,
    filesystem_tier_capacity,
    filesystem_tier_needs_rwx,
    lmcache_hash_seed,
    lmcache_image_tags_match,
    lmcache_isolated_ipc_agrees,
    memory_limit_covers_tier,
    mooncake_requests_rdma,
    prefix_caching_only_in_test_mode,
)
from policies.checks.cluster_isolation import NetworkPoliciesConfig, cluster_hardening, network_policy_per_pod
from policies.checks.event_routing import (
    kv_events_block_size,
    kv_events_hash_seed,
    kv_events_port_per_rank,
    precise_scorer_over_publishers,
    prefill_rate_agrees,
)
from policies.checks.identity import identity_labels
from policies.checks.pd_invariants import pd_block_size, pd_handoff_both_sides, pd_hash_seed, pd_rank_ports
from policies.checks.pod_security import (
    HostPathsConfig,
    PrivilegedConfig,
    annotator_least_privilege,
    containers_hardened,
    hf_token_from_secret,
    host_paths_allowed,
    no_host_namespaces,
    privileged_only_where_required,
    resource_requests,
    root_only_with_exemption,
    token_only_for_api_access,
)
from policies.checks.routing import (
    one_router_per_namespace,
    prefix_scoring_has_tokens,
    router_capacity_within_tier,
    router_selects_model_servers,
)
from policies.checks.rule_types import NoConfig, Rule
from policies.checks.storage_limits import StorageLimitsConfig, filesystem_tier_within_limits
from policies.checks.tier_payoff import TierPayoffConfig, tiers_beat_recompute

RULES: list[Rule[Any]] = [
    Rule(
        "identity-labels",
        "Accelerator and connector pods carry their profile's and connector's keys, which agree with the devices,"
        " nodes and connector they run; connector workloads carry their stamps",
        "mandatory",
        identity_labels,
        NoConfig,
    ),
    Rule(
        "router-capacity-within-tier",
        "Router CPU index no larger than the CPU tier a server reaches (every connector's stamp)",
        "mandatory",
        router_capacity_within_tier,
        NoConfig,
    ),
    Rule(
        "memory-limit-covers-tier",
        "Pod memory limit holds the CPU tier (every connector's stamp) and memory volumes",
        "mandatory",
        memory_limit_covers_tier,
        NoConfig,
    ),
    Rule(
        "filesystem-tier-rwx",
        "Filesystem tier on a ReadWriteMany claim",
        "mandatory",
        filesystem_tier_needs_rwx,
        NoConfig,
    ),
    Rule(
        "filesystem-tier-capacity",
        "The filesystem tier's claim has an evictor that can work (or says off)",
        "mandatory",
        filesystem_tier_capacity,
        NoConfig,
    ),
    Rule(
        "filesystem-tier-within-limits",
        "The filesystem tier's measured read and write rates stay within its backend's documented limits, per file"
        " system and per client (by more than throttleShare they throttle)",
        "mandatory",
        filesystem_tier_within_limits,
        StorageLimitsConfig,
    ),
    Rule(
        "pd-block-size",
        "P/D engines' --block-size equals the router's blockSizeTokens",
        "mandatory",
        pd_block_size,
        NoConfig,
    ),
    Rule("pd-hash-seed", "P/D engines share one PYTHONHASHSEED", "mandatory", pd_hash_seed, NoConfig),
    Rule(
        "pd-rank-ports",
        "Each local P/D engine has its own declared NIXL handshake port",
        "mandatory",
        pd_rank_ports,
        NoConfig,
    ),
    Rule(
        "pd-handoff-both-sides",
        "The P/D handoff runs on both prefill and decode pods",
        "mandatory",
        pd_handoff_both_sides,
        NoConfig,
    ),
    Rule("mooncake-rdma", "MooncakeStore pods request rdma/ib", "mandatory", mooncake_requests_rdma, NoConfig),
    Rule("lmcache-hash-seed", "LMCache clients set PYTHONHASHSEED", "mandatory", lmcache_hash_seed, NoConfig),
    Rule(
        "lmcache-image-tags",
        "LMCache server and clients share one image tag",
        "mandatory",
        lmcache_image_tags_match,
        NoConfig,
    ),
    Rule(
        "lmcache-isolated-ipc",
        "lmcache.mp.isolated_ipc agrees with the server flag",
        "mandatory",
        lmcache_isolated_ipc_agrees,
        NoConfig,
    ),
    Rule(
        "prefix-scoring-tokens",
        "Token-block prefix scoring has a tokenizer",
        "advisory",
        prefix_scoring_has_tokens,
        NoConfig,
    ),
    Rule(
        "tiers-beat-recompute",
        "Each offload tier reloads faster than recompute (else it saves accelerator time, not TTFT)",
        "advisory",
        tiers_beat_recompute,
        TierPayoffConfig,
    ),
    Rule(
        "prefix-caching-on",
        "--no-enable-prefix-caching only in test mode",
        "mandatory",
        prefix_caching_only_in_test_mode,
        PrefixCachingConfig,
    ),
    Rule(
        "kv-events-block-size",
        "Engines publishing KV events state one block size, the precise router's",
        "mandatory",
        kv_events_block_size,
        NoConfig,
    ),
    Rule(
        "kv-events-hash-seed",
        "Engines publishing KV events set one PYTHONHASHSEED, the precise router's hashSeed",
        "mandatory",
        kv_events_hash_seed,
        NoConfig,
    ),
    Rule(
        "kv-events-port-per-rank",
        "Each rank publishes KV events on its own declared port, the one the precise router dials",
        "mandatory",
        kv_events_port_per_rank,
        NoConfig,
    ),
    Rule(
        "precise-scorer-publishers",
        "A precise prefix index routes only over engines that publish every tier's KV events",
        "mandatory",
        precise_scorer_over_publishers,
        NoConfig,
    ),
    Rule(
        "prefill-rate-agrees",
        "The token-aware trigger divides by the router filter's peak prefill rate",
        "mandatory",
        prefill_rate_agrees,
        NoConfig,
    ),
    Rule(
        "router-selects-servers",
        "Router matchLabels select a model server",
        "mandatory",
        router_selects_model_servers,
        NoConfig,
    ),
    Rule(
        "one-router-per-namespace", "One router release per namespace", "mandatory", one_router_per_namespace, NoConfig
    ),
    Rule(
        "weights-fetched-once",
        "Weights fetched once onto shared storage, not per pod",
        "advisory",
        weights_fetched_once,
        NoConfig,
    ),
    Rule("images-pinned", "Images and charts pinned", "mandatory", images_pinned, ImagesPinnedConfig),
    Rule(
        "image-prepull",
        "The image pre-pull runs on the serving pool and pulls every model-server image",
        "mandatory",
        image_prepull,
        NoConfig,
    ),
    Rule("resource-requests", "Every container requests cpu and memory", "mandatory", resource_requests, NoConfig),
    Rule(
        "privileged-containers",
        "Privileged only where the seeds require it",
        "mandatory",
        privileged_only_where_required,
        PrivilegedConfig,
    ),
    Rule(
        "root-containers",
        "Containers run as root only with an exemption",
        "mandatory",
        root_only_with_exemption,
        NoConfig,
    ),
    Rule(
        "hardened-containers",
        "No escalation, capabilities dropped, seccomp",
        "mandatory",
        containers_hardened,
        NoConfig,
    ),
    Rule("host-namespaces", "No pod shares the node's namespaces", "mandatory", no_host_namespaces, NoConfig),
    Rule("host-paths", "hostPath volumes only where allowed", "mandatory", host_paths_allowed, HostPathsConfig),
    Rule(
        "token-automount",
        "Service-account tokens only for API access",
        "mandatory",
        token_only_for_api_access,
        NoConfig,
    ),
    Rule(
        "annotator-least-privilege",
        "The cache annotator holds get, list and patch on the pods of its own namespace, nothing cluster-wide or more",
        "mandatory",
        annotator_least_privilege,
        NoConfig,
    ),
    Rule(
        "network-policies",
        "Every pod behind an ingress NetworkPolicy",
        "mandatory",
        network_policy_per_pod,
        NetworkPoliciesConfig,
    ),
    Rule(
        "chart-registries",
        "Charts only from allowed registries",
        "mandatory",
        charts_from_allowed_registries,
        ChartRegistriesConfig,
    ),
    Rule("hf-token-secret", "HF token only through a Secret", "mandatory", hf_token_from_secret, NoConfig),
    Rule(
        "cluster-hardening",
        "Private nodes, workload identity, shielded nodes",
        "mandatory",
        cluster_hardening,
        NoConfig,
    ),
    Rule(
        "monthly-budget",
        "A stack that sets pricing.monthly_budget costs no more per month than it (the plan's figure); a budget"
        " that cannot be judged (nothing priced, a stamp missing or not a finite number) is refused",
        "mandatory",
        monthly_budget,
        BudgetConfig,
    ),
    Rule(
        "monthly-budget-default",
        "A stack that sets no pricing.monthly_budget costs no more per month than the pack's defaultMonthlyBudget"
        " (0: none, nothing judged)",
        "advisory",
        monthly_budget_default,
        DefaultBudgetConfig,
    ),
]
