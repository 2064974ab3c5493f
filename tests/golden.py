"""Golden renders: per preset, the manifests, the router chart's values, the Pulumi resources (cloud
arguments, parents, dependencies, providers, secret paths) and the summary, checked in.

`./run golden` rewrites them; review the diff like code, since it is the change to what deploys.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from stacks.config import loading
from stacks.review.render import Render

GOLDEN = Path(__file__).parent / "golden"
REPO = Path(__file__).resolve().parents[1]
# The component package's generated inputs and its schema (docs/any-language.md), reviewed like the renders.
PACKAGE_ARGS = REPO / "stacks" / "package" / "args.py"
PACKAGE_SCHEMA = REPO / "package" / "schema.json"
# Goldens beyond the presets: (preset, overrides) for settings no preset turns on.
VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gpu-vllm-native-cpu+monitoring": ("gpu-vllm-native-cpu", ("monitoring.enabled=true",)),
    "gpu-vllm-lmcache-server+gke-monitoring": (
        "gpu-vllm-lmcache-server",
        ("monitoring.enabled=true", "monitoring.provider=gke-managed-prometheus"),
    ),
}


def golden_names() -> list[str]:
    return sorted([*loading.preset_names(), *VARIANTS])


def golden_render(name: str) -> Render:
    from tests.helpers import rendered

    preset, overrides = VARIANTS.get(name, (name, ()))
    return rendered(preset, overrides)


def golden_files(result: Render) -> dict[str, str]:
    charts = [r for r in json.loads(result.resources) if r["name"] == "llmd-router-chart"]
    values = yaml.safe_dump(charts[0]["inputs"]["values"], sort_keys=True, width=120) if charts else ""
    return {
        "manifests.yaml": result.manifests,
        "resources.json": result.resources,
        "router-values.yaml": values,
        "summary.md": result.summary,
    }


def write_all() -> list[str]:
    written = []
    for name in golden_names():
        folder = GOLDEN / name
        folder.mkdir(parents=True, exist_ok=True)
        for file, text in golden_files(golden_render(name)).items():
            (folder / file).write_text(text)
        written.append(name)
    for stale in {p.name for p in GOLDEN.iterdir() if p.is_dir()} - set(written):
        for path in (GOLDEN / stale).iterdir():
            path.unlink()
        (GOLDEN / stale).rmdir()
    return written


def schema_text() -> str:
    """The package's schema as its provider infers it, in a fresh interpreter (the Args it reads may just have been
    rewritten)."""
    code = (
        "import json; from stacks.package.provider import schema; print(json.dumps(schema(), indent=2, sort_keys=True))"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout


PRICES_CSV = REPO / "tests" / "fixtures" / "prices" / "prices.csv"  # the price catalog written out


def write_prices() -> None:
    from components.catalog.prices import csv_text

    PRICES_CSV.write_text(csv_text())


def write_package() -> None:
    from stacks.package.args_codegen import generate

    PACKAGE_ARGS.write_text(generate())
    PACKAGE_SCHEMA.write_text(schema_text())


if __name__ == "__main__":
    write_prices()
    print(f"wrote {PRICES_CSV.relative_to(REPO)}", file=sys.stderr)
    write_package()
    print(f"wrote {PACKAGE_ARGS.relative_to(REPO)} and {PACKAGE_SCHEMA.relative_to(REPO)}", file=sys.stderr)
    names = write_all()
    print(f"wrote golden renders of {len(names)} presets and variants to {GOLDEN}", file=sys.stderr)
