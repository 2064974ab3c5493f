"""Pulumi.yaml and the stack files as the Pulumi CLI reads them."""

from pathlib import Path

import yaml

from stacks.config import SECTIONS, loading

ROOT = Path(__file__).resolve().parents[1]
# pulumi/pulumi sdk/go/common/workspace/project.json: a declared key needs one of these types.
PROJECT_CONFIG_TYPES = {"string", "integer", "boolean", "array"}


def test_project_is_a_python_program_with_a_virtualenv() -> None:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == loading.CONFIG_NAMESPACE
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}}


def test_declared_config_keys_have_a_type_the_cli_accepts_and_a_description() -> None:
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    for key, declaration in declared.items():
        assert declaration["type"] in PROJECT_CONFIG_TYPES, key
        assert declaration["description"], key
        assert key in loading.PULUMI_KEYS, key
    # hfToken stays undeclared: the engine requires every declared key of every stack, and a cluster stack
    # (layer cluster) serves no model (the program requires it of the others, as a secret).
    assert "hfToken" not in declared


def test_every_structured_section_is_documented_in_pulumi_yaml() -> None:
    text = (ROOT / "Pulumi.yaml").read_text()
    for section in SECTIONS:
        if section != "description":
            assert f"llmd:{section}" in text or f"  {section}:" in text, section


def test_stack_files_hold_only_known_llmd_keys() -> None:
    for path in ROOT.glob("Pulumi.*.yaml"):
        config = yaml.safe_load(path.read_text())["config"]
        loading.pulumi_sections(config)  # raises on an unknown llmd: key


def test_pull_requests_run_the_projects_own_lint_and_tests() -> None:
    """The PR workflow runs .ci/run, and .ci/run runs `./run lint` and the README's test command."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as a boolean
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
    steps = workflow["jobs"]["lint-and-test"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert [s["run"] for s in steps if "run" in s] == [".ci/run"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines() if not line.startswith("#")]
    readme_test = next(
        line.split("#")[0].strip() for line in (ROOT / "README.md").read_text().splitlines() if "./run test" in line
    )
    cleaned = next(line.split()[2:] for line in ci if line.startswith("rm -rf "))
    assert {".venv", ".tools"} <= set(cleaned)  # a fresh environment and Helm, as a contributor's checkout has
    assert "./run lint" in ci and readme_test in ci
