"""The policy pack through the engine's analyzer: the stack passes it, and seeded violations fail it.

Two seeds: a floating image tag (a config value), and the router's CPU index above the tier (a stack
transform halving the model servers' tier, `e2e.seeds`), each in a preview of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

from e2e import seeds
from e2e.engine import Engine, Result
from e2e.steps import StepError

FLOATING_TAG = ("llmd:cache.image", "docker.io/vllm/vllm-openai:latest", "images-pinned")


def pack_args(engine: Engine, project: Path) -> tuple[str, ...]:
    # The e2e deploys the fixture chart from disk, which the pack refuses unless told (as an air-gapped user would).
    pack_config = engine.workdir / "policy-config.json"
    pack_config.write_text(json.dumps({"chart-registries": {"allowLocalCharts": True}}))
    return ("--policy-pack", str(project / "policies"), "--policy-pack-config", str(pack_config))


def failed_with(result: Result, rule: str, phrase: str) -> bool:
    text = result.stdout + result.stderr
    return not result.ok and rule in text and phrase in text


def _seed_floating_tag(engine: Engine, args: tuple[str, ...]) -> str:
    key, value, rule = FLOATING_TAG
    engine.set_config(key, value)
    try:
        seeded = engine.run("preview", *args)
    finally:
        engine.remove_config(key)
    if not failed_with(seeded, rule, "floating tag"):
        raise StepError(f"a floating image tag did not fail the preview with rule {rule}:\n" + seeded.tail(30))
    return f"`{key}={value}` fails it with {rule}"


def _seed_small_tier(engine: Engine, project: Path, args: tuple[str, ...], resources_json: str) -> str:
    expected = seeds.tier_violations(resources_json)  # the rule over the offline render, tier halved
    if not expected:
        return f"{seeds.TIER_RULE} not seeded: the router sizes its index by no CPU tier of this stack"
    entry = project / "__main__.py"
    program = entry.read_text()
    entry.write_text(seeds.ENTRY)
    try:
        seeded = engine.run("preview", *args)
    finally:
        entry.write_text(program)
    if not failed_with(seeded, seeds.TIER_RULE, expected[0]):
        raise StepError(
            f"a tier half the router's index did not fail the preview with rule {seeds.TIER_RULE}:\n" + seeded.tail(30)
        )
    return f"the tier halved under the router's index fails it with {seeds.TIER_RULE}"


def check_pack(engine: Engine, project: Path, resources_json: str) -> str:
    """The unchanged stack passes its pack; each seeded violation fails the preview with its rule."""
    args = pack_args(engine, project)
    result = engine.run("preview", *args)
    if not result.ok:
        raise StepError("the unchanged stack fails its policy pack:\n" + result.tail(40))
    found = [_seed_floating_tag(engine, args), _seed_small_tier(engine, project, args, resources_json)]
    return "passes; " + "; ".join(found)
