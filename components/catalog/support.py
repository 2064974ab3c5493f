"""Which accelerator x model server x connector x tier combinations this program deploys."""

from __future__ import annotations

Combo = tuple[str, str, str, str]  # accelerator, server, connector, variant

SUPPORTED: frozenset[Combo] = frozenset(
    {
        ("gpu", "vllm", "native", "cpu"),
    }
)

_FIELDS = ("cache.accelerator", "cache.server", "cache.connector", "cache.tier.variant")


def supported_for(combo: Combo) -> tuple[str, str, str]:
    """For an unsupported combination: the first field that breaks it, its value, and what is allowed there."""
    for i, field in enumerate(_FIELDS):
        prefix = combo[: i + 1]
        if not any(s[: i + 1] == prefix for s in SUPPORTED):
            context = ", ".join(f"{_FIELDS[j].rsplit('.', 1)[-1]} {combo[j]}" for j in range(i))
            allowed = sorted({s[i] for s in SUPPORTED if s[:i] == combo[:i]})
            where = f" with {context}" if context else ""
            return field, combo[i], f"not supported{where}; allowed: {', '.join(allowed)}"
    raise ValueError(f"{combo} is supported")
