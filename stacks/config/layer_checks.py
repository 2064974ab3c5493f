"""The layers' own rules: a cluster stack serves no model, a serving stack creates no cluster, and each setting
belongs to the layer that acts on it (one line naming the field otherwise)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.catalog.key_lists import spoken
from components.catalog.platforms import PLATFORMS
from components.catalog.storage_backends import CREATED_BACKENDS, STORAGE_BACKENDS
from components.specs.gateway import gateway_class_for
from stacks.config.errors import ConfigError
from stacks.config.providers import provider_of, providers_that

if TYPE_CHECKING:
    from stacks.config import StackConfig

# What a cluster stack has no use for: the model's sections (the router's CRD release stays: it applies them).
MODEL_SECTIONS = ("cache", "lmcache", "model_cache", "verification", "workload")
ROUTER_CLUSTER_FIELDS = {"gaie_version", "gaie_crds_file"}
_READERS = providers_that(lambda p: p.reads_cluster_stack)  # the providers a serving stack runs on


def check_layer(config: StackConfig) -> None:
    layer, cluster = config.effective_layer, config.cluster
    on_cluster_stack = provider_of(config).reads_cluster_stack
    if (layer == "serving") != on_cluster_stack:
        if layer == "serving":
            raise ConfigError(
                "layer", layer, f"a serving stack runs on a cluster stack's cluster: set cluster.provider {_READERS}"
            )
        raise ConfigError(
            "cluster.provider", cluster.provider, f"serves on a cluster stack's cluster; layer {layer} cannot"
        )
    for name in ("stack", "outputs_file"):
        if not on_cluster_stack and name in cluster.model_fields_set:
            raise ConfigError(
                f"cluster.{name}", getattr(cluster, name), f"applies only with cluster.provider {_READERS}"
            )
    if layer == "cluster":
        _check_cluster_layer(config)
        return
    if "gateway" in config.model_fields_set:
        raise ConfigError(
            "gateway", "(set)", "belongs to the cluster stack (layer cluster), which fronts its serving stacks"
        )
    if "claim_namespace" in config.storage.model_fields_set:
        raise ConfigError(
            "storage.claim_namespace", config.storage.claim_namespace, "applies only to a cluster stack (layer cluster)"
        )


def _check_cluster_layer(config: StackConfig) -> None:
    for section in MODEL_SECTIONS:
        if section in config.model_fields_set:
            raise ConfigError(section, "(set)", "a cluster stack serves no model: set it in a serving stack")
    extra = sorted(config.router.model_fields_set - ROUTER_CLUSTER_FIELDS)
    if extra:
        raise ConfigError(
            f"router.{extra[0]}",
            "(set)",
            "a cluster stack runs no router (only router.gaie_version's CRDs): set it in a serving stack",
        )
    per_model = sorted(config.autoscaling.model_fields_set - {"enabled"})
    if per_model:
        raise ConfigError(
            f"autoscaling.{per_model[0]}",
            "(set)",
            "a serving stack's own (a cluster stack's autoscaling.enabled only says KEDA runs on its cluster)",
        )
    storage = config.storage
    backend = STORAGE_BACKENDS[storage.backend]
    if "claim_namespace" in storage.model_fields_set and not backend.one_claim_per_volume:
        owners = spoken(k for k, b in STORAGE_BACKENDS.items() if b.one_claim_per_volume)
        raise ConfigError(
            "storage.claim_namespace", storage.claim_namespace, f"applies only with storage.backend {owners}"
        )
    if not backend.created and storage.model_fields_set - {"backend"}:
        raise ConfigError(
            "storage",
            "(set)",
            f"a cluster stack exports only storage it creates ({', '.join(CREATED_BACKENDS)}): a serving"
            " stack on an existing class describes it itself",
        )
    gateway = config.gateway
    managed = PLATFORMS[config.cluster.effective_platform].managed_gateway
    if gateway.enabled and not managed and gateway.class_name is None:
        raise ConfigError("gateway.class_name", None, "required off GKE: kgateway or istio, whichever the cluster runs")
    if gateway.enabled:
        try:  # the classes each platform has (components/specs/gateway.py), the one list describe() reads
            gateway_class_for(config.cluster.effective_platform, gateway.class_name)
        except ValueError as error:
            raise ConfigError("gateway.class_name", gateway.class_name, str(error)) from None
