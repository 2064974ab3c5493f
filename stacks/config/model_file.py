"""A model outside the catalog, by its Hugging Face config.json (`cache.model_file`): a file inside the project,
read once at load (never fetched) as a careful tool reads it (`files.read_bytes`: a regular file, at most 1 MiB,
nested at most 32 deep; a published config.json is a few KiB), and turned into a `ModelSpec` by the catalog's
own reader (`components/catalog/hf_config.py`), so a user's model is sized exactly as a catalog one. Each
problem is one line naming `cache.model_file` and the field of the file."""

from __future__ import annotations

import json
from pathlib import Path

from components.catalog.hf_config import ConfigFieldError, model_from_config
from components.catalog.model_geometry import ModelSpec
from components.catalog.models import MODELS
from stacks.config import StackConfig, files
from stacks.config.errors import MISSING, ConfigError

FIELD = "cache.model_file"


def read_model_file(relative: str, model_id: str, project_dir: Path) -> ModelSpec:
    """The geometry of `model_id` from the config.json at `relative` (to the project root)."""

    def refused(why: str) -> ConfigError:
        return ConfigError(FIELD, relative, why)

    try:
        raw = files.read_bytes(project_dir / relative, project_dir)
    except files.UnreadableError as error:
        raise refused(f"cannot read the file: {error}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise refused("not JSON (a Hugging Face config.json)") from None
    except RecursionError:  # the decoder's own limit, far past ours
        raise refused(f"nested deeper than {files.MAX_DEPTH} levels") from None
    if files.nesting_depth(data) > files.MAX_DEPTH:
        raise refused(f"nested deeper than {files.MAX_DEPTH} levels")
    try:
        return model_from_config(model_id, data, config_from=f"`{relative}` ({FIELD})")
    except ConfigFieldError as error:
        raise refused(f"its {error}") from None


def with_model_file(config: StackConfig, project_dir: Path) -> StackConfig:
    """The config with its `cache.model_file` read into its cache section; `cache.model` checked against it: an
    id outside the catalog needs the file, the file needs the id, and a catalog model takes its geometry from
    the catalog (one source)."""
    cache = config.cache
    if config.effective_layer == "cluster":  # serves no model (check_layer refuses a cache section)
        return config
    if cache.model_file is None:
        if cache.model is not None and cache.model not in MODELS:
            raise ConfigError(
                "cache.model",
                cache.model,
                f"not in the catalog ({', '.join(sorted(MODELS))}); a model outside it needs {FIELD}: its config.json",
            )
        return config
    if cache.model is None:
        raise ConfigError(
            "cache.model", MISSING, f"required with {FIELD}: the Hugging Face id the servers fetch and serve"
        )
    if cache.model in MODELS:
        raise ConfigError(
            FIELD,
            cache.model_file,
            f"{cache.model} is in the catalog, which holds its geometry; {FIELD} is for a model outside it",
        )
    spec = read_model_file(cache.model_file, cache.model, project_dir)
    return config.model_copy(update={"cache": cache.with_model_file(spec)})
