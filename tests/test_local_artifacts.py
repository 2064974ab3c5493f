"""What the program fetches at deploy time (the router chart, the GAIE CRDs) can come from local files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stacks.config import loading
from stacks.config.errors import ConfigError
from tests.helpers import rendered, resources, router_chart

FIXTURES = Path(__file__).parent / "fixtures" / "upstream"
CHART = FIXTURES / "charts" / "llm-d-router-standalone-v0.10.0.tgz"
CRDS = (
    FIXTURES
    / "schemas"
    / "gateway-api-inference-extension"
    / "v1.6.0"
    / "inference.networking.k8s.io_inferencepools.yaml"
)


def _config_file(rows: list[dict[str, Any]]) -> dict[str, Any]:
    (row,) = [r for r in rows if r["type"] == "kubernetes:yaml/v2:ConfigFile"]
    return row


def test_a_local_chart_and_crd_file_replace_the_downloads() -> None:
    rows = resources(rendered("dev", (f"router.chart_file={CHART}", f"router.gaie_crds_file={CRDS}")))
    chart = router_chart(rows)
    assert chart["inputs"]["chart"] == str(CHART)
    assert "version" not in chart["inputs"]  # a packaged chart carries its own; Helm refuses one for a path
    assert _config_file(rows)["inputs"]["file"] == str(CRDS)


def test_without_them_the_chart_is_pulled_and_the_release_asset_downloaded() -> None:
    rows = resources(rendered("dev"))
    chart = router_chart(rows)
    assert chart["inputs"]["chart"].startswith("oci://")
    assert chart["inputs"]["version"]
    assert _config_file(rows)["inputs"]["file"].startswith("https://github.com/kubernetes-sigs/")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "router.chart_file=/nonexistent/chart.tgz",
            r"router.chart_file = '/nonexistent/chart.tgz': must be an existing file",
        ),
        (f"router.chart_file={CRDS}", r"router.chart_file = .*: must be a path to a .tgz file"),
        (f"router.gaie_crds_file={CHART}", r"router.gaie_crds_file = .*: must be a path to a .yaml or .yml file"),
    ],
)
def test_a_missing_or_wrong_file_is_one_line(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        loading.load_preset("dev", [override])


def test_an_explicit_null_means_the_download() -> None:
    """Found by the fuzz test: `router.chart_file: null` in a stack file is the default, not a traceback."""
    config = loading.load_preset("dev", ["router.chart_file=null", "router.gaie_crds_file=null"])
    assert config.router.chart_file is None and config.router.gaie_crds_file is None
