"""The stack's prices, as the cost reads them (stacks/planning/workload/cost.py): the user's override
(`pricing.prices`), else the catalog's row (components/catalog/prices.py) for the stack's region at the rate kind
`pricing.rate` gives a machine type; what no price covers, with the key to set; and the one line that stops a
budgeted stack in a region the catalog does not cover, naming every key it lacks."""

from __future__ import annotations

from collections.abc import Sequence

from components.catalog import prices
from components.catalog.prices import RateKind
from stacks.config import StackConfig
from stacks.config.errors import ConfigError
from stacks.config.providers import provider_of
from stacks.planning.workload.cost_records import PriceUsed, Unpriced


class PriceBook:
    """The stack's prices: the user's override, else the catalog's row for the region at the kind asked."""

    def __init__(self, config: StackConfig, region: str | None) -> None:
        self.overrides = config.pricing.prices
        self.rate = config.pricing.rate
        self.region = region
        self.budgeted = config.pricing.monthly_budget is not None

    def kind(self, spot: bool = False) -> RateKind:
        """A machine type's kind: `pricing.rate`, or under `auto` a spot pool's spot rate, else on demand."""
        if self.rate == "auto":
            return "spot" if spot else "on-demand"
        return self.rate

    def get(self, item: str, kind: RateKind = "on-demand") -> PriceUsed | None:
        """The item's price at `kind`; None where there is none (the ledger lists it unpriced)."""
        unit = prices.unit_of(item)
        if item in self.overrides:
            usd = self.overrides[item]
            return PriceUsed(item, self.region, kind, unit, usd, "pricing.prices", "stack config", True)
        row = prices.BY_KEY.get((item, self.region, kind)) if self.region else None
        if row is None:
            return None
        return PriceUsed(item, row.region, kind, row.unit, row.usd, row.source, row.as_of, False)

    def uncovered(self) -> str:
        return f"it covers {', '.join(sorted(prices.REGIONS))}"

    def missing(self, what: str, item: str, kind: RateKind) -> Unpriced:
        if self.region is None:
            where = "without a region (pricing.region)"
        elif self.region not in prices.REGIONS:
            where = f"in {self.region}: the catalog has no prices for this region ({self.uncovered()})"
        else:
            where = f"in {self.region}"
        remedy = f"set pricing.prices.{item} (USD per {prices.unit_of(item)})"
        if kind != "on-demand" and self.region and (item, self.region, "on-demand") in prices.BY_KEY:
            remedy += " or pricing.rate: on-demand"
        return Unpriced(what, f"no catalog {kind} price for {item} {where}", remedy)

    def check_judgeable(self, unpriced: Sequence[Unpriced]) -> None:
        """A budget in a region the catalog does not cover cannot be judged: one line naming every key to set."""
        if not self.budgeted or self.region is None or self.region in prices.REGIONS:
            return
        keys = [u.remedy.removeprefix("set ") for u in unpriced if u.remedy.startswith("set pricing.prices.")]
        if keys:
            raise ConfigError(
                "pricing.prices",
                self.region,
                f"the price catalog has no prices for this region ({self.uncovered()}), so pricing.monthly_budget"
                f" cannot be judged; set to what you pay: {'; '.join(keys)}",
            )


def book_of(config: StackConfig) -> PriceBook:
    """The stack's prices at its region: a created cluster's own, else `pricing.region`."""
    bill = provider_of(config).bill(config)
    return PriceBook(config, bill.region if bill is not None else config.pricing.region)
