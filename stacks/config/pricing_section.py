"""What the stack's prices are: the catalog's prices (components/catalog/prices.py) at the rate kind
`pricing.rate` chooses, any of them overridden by the rates the user pays (negotiated), the monthly budget the
policy pack holds the stack to, and the objective `cache.tier.cpu: auto` sizes by
(stacks/planning/workload/tier_objective.py). Which keys apply to which stack: stacks/config/pricing_checks.py."""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator

from components.catalog.prices import RateKind
from components.catalog.regions import AWS_REGIONS, GCP_REGIONS
from stacks.config.fields import Section

MAX_USD = 1e12  # far above any fleet's bill; a typo of many zeros is refused rather than shown

PricingObjective = Literal["cost", "latency"]  # what `cache.tier.cpu: auto` sizes by


def _usd(value: object) -> float:
    """A price: a finite number of dollars, zero or more (a free item is 0)."""
    number = _number(value)
    if number is None or not math.isfinite(number) or not 0 <= number <= MAX_USD:
        raise ValueError(f"must be a number of US dollars per unit, 0 to {MAX_USD:g}")
    return number


PriceKey = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{0,62}$")]
Usd = Annotated[float, BeforeValidator(_usd)]
# A budget written with its unit: `25000`, `25000 USD/month`, `$25,000 per month`.
_BUDGET = re.compile(r"^\s*\$?\s*(?P<usd>[0-9][0-9,]*(\.[0-9]+)?)\s*(usd)?\s*((/|per)\s*(month|mo))?\s*$", re.I)


class PricingConfig(Section):
    """Prices of what the stack creates, in US dollars: the catalog's price at `rate` unless overridden here; the
    budget the policy pack holds the stack to; and whether `cache.tier.cpu: auto` sizes for latency (the default)
    or cost."""

    prices: dict[PriceKey, Usd] = Field(
        default_factory=dict,
        description="USD per unit by item, over the catalog's price at pricing.rate (negotiated rates):"
        " a machine type per node-hour (`a3-highgpu-8g: 30.5`), `gke-cluster` or `eks-cluster` per hour,"
        " `efs-storage` per GB-month, `efs-read` and `efs-write` per GB, `lustre-<MB/s per TiB>` per GiB-month;"
        " the summary marks each overridden price; a key that names nothing the catalog or the stack knows is"
        " refused; a key with dots is set as a map: `--set 'pricing.prices={p5.48xlarge: 30.5}'`",
    )
    rate: Literal["auto"] | RateKind = Field(
        default="auto",
        description="the rate kind a node pool's machine type is priced at: `auto` (the default) prices a created"
        " pool with `spot: true` at the catalog's spot rate and every other one on demand; `on-demand`, `spot`,"
        " `committed` (a 1-year commitment) or `flex` (flex-start) prices every node pool's machine type, the system"
        " pool's included, at that kind; the cluster fee and storage have one rate each. A machine type with no row"
        " of that kind in the region is listed unpriced with the key to set",
    )
    machine_types: dict[str, PriceKey] = Field(
        default_factory=dict,
        description="an existing cluster's described pools by key: the machine type each runs, priced by the"
        " catalog at pricing.region or by pricing.prices (`h100: p5.48xlarge`); unset: the pool is listed unpriced;"
        " refused on a cluster the stack creates (its pools' own machine types price it) and where a catalog"
        " machine type carries another accelerator or device count than the pool",
    )
    region: str | None = Field(
        default=None,
        description="the region whose catalog prices an existing cluster's pools (pricing.machine_types) and a"
        " serving stack's filesystem traffic; refused on a cluster the stack creates (its own region prices it);"
        " unset: they are priced only by pricing.prices",
    )
    monthly_budget: float | None = Field(
        default=None,
        description="US dollars per month the stack may cost (`25000` or `25000 USD/month`); set, the policy"
        " pack's monthly-budget rule refuses a stack whose planned cost is above it (mandatory); unset, the"
        " advisory monthly-budget-default rule reports a cost above the pack's own defaultMonthlyBudget (none"
        " unless the pack's config sets it)",
    )

    objective: PricingObjective = Field(
        default="latency",
        description="what `cache.tier.cpu: auto` optimises with a workload: `latency` (the default) takes the"
        " smallest size within a point of prompt tokens of the best hit share the node holds; `cost` the cheapest"
        " size that keeps up (and meets workload.slo): the replicas it needs at each size (with cache.replicas:"
        " auto the capacity plan's fewest, which the plan renders; with a count, that count where it keeps up) x"
        " one replica's accelerator price, plus the filesystem tier's charges at that size (the CPU tier has no"
        " price of its own), the smallest on a tie. The filesystem tier's size is `storage.size` as configured:"
        " the plan does not choose it. The summary and `./run size` name the objective and price both choices",
    )

    @field_validator("region")
    @classmethod
    def _a_region(cls, value: str | None) -> str | None:
        if value is not None and value not in GCP_REGIONS and value not in AWS_REGIONS:
            raise ValueError("must be a GCP or AWS region (components/catalog/regions.py)")
        return value

    @field_validator("monthly_budget", mode="before")
    @classmethod
    def _usd_per_month(cls, value: object) -> object:
        """A number, or a number with `USD`, `$` and `/month`: any other unit (per hour, EUR, k) is refused."""
        if value is None or isinstance(value, bool):
            return value
        number = _number(value)
        if number is None and isinstance(value, str) and (found := _BUDGET.match(value)):
            number = float(found["usd"].replace(",", ""))
        if number is None or not math.isfinite(number) or not 0 < number <= MAX_USD:
            raise ValueError(
                "must be US dollars per month: a number above 0 such as 25000, or '25000 USD/month'"
                " (a figure per hour is 730 times less: multiply it by 730)"
            )
        return number


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None
