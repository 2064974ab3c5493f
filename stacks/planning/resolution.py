"""The stack resolved once: the config's choice as the connectors read it, the connector the registry
resolves from it, the combination's defaults, the accelerator profile, the model and the counts the
defaults fill in. The planning takes this record rather than re-deriving each from `StackConfig`."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.accelerators import ACCELERATORS, AcceleratorProfile
from components.catalog.models import ModelSpec
from components.catalog.support import SUPPORTED, ComboDefaults
from components.specs.connectors import Choice, Connector
from stacks.config import StackConfig
from stacks.config.connector_choice import choice, connector_of


@dataclass(frozen=True)
class Resolved:
    config: StackConfig
    choice: Choice
    connector: Connector
    defaults: ComboDefaults
    accelerator: AcceleratorProfile
    model: ModelSpec
    tensor_parallelism: int
    replicas: int
    devices: int  # accelerator devices (TPU chips) per pod

    @property
    def group_size(self) -> int:
        """Pods per replica (a multi-host replica's hosts)."""
        return self.defaults.group_size

    @property
    def pods(self) -> int:
        """The stack's model-server pods: replicas x pods per replica x roles (P/D: each pool's replicas)."""
        pd = self.choice.disaggregation
        if pd is not None:
            return pd.prefill.replicas + pd.decode.replicas
        return self.replicas * self.group_size * self.connector.roles(self.choice)

    @property
    def uses_tier_claim(self) -> bool:
        """The filesystem tier on the shared ReadWriteMany claim."""
        return self.connector.uses_tier_claim(self.config.cache.tier.variant)


def combo_defaults(config: StackConfig) -> ComboDefaults:
    cache = config.cache
    return SUPPORTED[(cache.accelerator, cache.server, cache.connector, cache.tier.variant, cache.host_type)]


def resolve(config: StackConfig) -> Resolved:
    cache, defaults = config.cache, combo_defaults(config)
    tp = cache.tensor_parallelism or defaults.tensor_parallelism
    return Resolved(
        config=config,
        choice=choice(config),
        connector=connector_of(config),
        defaults=defaults,
        accelerator=ACCELERATORS[cache.accelerator],
        model=cache.model_spec(defaults.model),
        tensor_parallelism=tp,
        replicas=cache.replicas if isinstance(cache.replicas, int) else defaults.replicas,  # auto: planned later
        devices=defaults.devices if defaults.devices is not None else tp,
    )
