"""The one-line error every bad input ends in: which field, what value, what is allowed."""

from __future__ import annotations

import types
import typing
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ValidationError

HIDDEN = "(not shown)"  # in place of a value an error must not print: a secret, or an unknown key's


class ConfigError(Exception):
    def __init__(self, field: str, value: Any, allowed: str, *, hidden: bool = False) -> None:
        self.field, self.value, self.allowed, self.hidden = field, value, allowed, hidden
        shown = "(missing)" if value is _MISSING else HIDDEN if hidden else repr(value)
        super().__init__(_one_line(f"invalid stack config: {field} = {shown}: {allowed}"))

    def hiding(self, secret_fields: Collection[str], secrets: Collection[str]) -> ConfigError:
        """This error with nothing of the secrets in it: the value of a field under a secret key (or one
        that holds a secret's text) is not shown, and a secret's text is cut out of what is allowed."""
        under = any(self.field == f or self.field.startswith((f"{f}.", f"{f}[")) for f in secret_fields)
        allowed, text = self.allowed, repr(self.value)
        hidden = self.hidden or under
        for secret in (s for s in secrets if s):
            for form in {secret, repr(secret)[1:-1]}:
                hidden = hidden or form in text
                allowed = allowed.replace(form, HIDDEN)
        return ConfigError(self.field, self.value, allowed, hidden=hidden)


_MISSING = object()
MISSING = _MISSING  # a value left out: shown as (missing)


def _one_line(text: str) -> str:
    """Keys come from the user: a newline or control character in one is escaped, not printed."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def unwrap_optional(annotation: typing.Any) -> typing.Any:
    """`Section | None` -> Section (an optional section's keys are listed as a required one's)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        return models[0] if len(models) == 1 else annotation
    return annotation


def _model_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The pydantic model that holds the last key of `loc` (dict keys and list indexes are stepped over)."""
    current: typing.Any = root
    for part in loc:
        if typing.get_origin(current) in (dict, list):
            current = typing.get_args(current)[-1]
        elif isinstance(current, type) and issubclass(current, BaseModel) and str(part) in current.model_fields:
            current = unwrap_optional(current.model_fields[str(part)].annotation)
        else:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def from_validation_error(error: ValidationError, prefix: str = "", root: type[BaseModel] | None = None) -> ConfigError:
    """The first pydantic error as a ConfigError; further errors are counted, not listed."""
    first = error.errors(include_url=False)[0]
    loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    field = ".".join(p for p in (prefix, _dotted(loc)) if p)
    message = first["msg"]
    hidden = False
    if first["type"] == "extra_forbidden":  # a mistyped key may hold a secret: its value is not shown
        value: Any = first["input"]
        hidden = True
        holder = _model_at(root, loc[:-1]) if root else None
        message = "unknown key" + (f"; allowed keys: {', '.join(holder.model_fields)}" if holder else "")
    elif first["type"] == "missing":
        value = _MISSING
    else:
        value = first["input"]
    message = message.removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    more = error.error_count() - 1
    if more:
        message += f" (and {more} more error{'s' if more > 1 else ''})"
    return ConfigError(field, value, message, hidden=hidden)
