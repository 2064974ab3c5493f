"""The e2e step that reads a precise preset's endpoint pickers back finds them from the render (a precise render's
router chart runs the tokenizer sidecar; an approximate one's does not)."""

from __future__ import annotations

from e2e.pickers import precise_router
from tests.golden import GOLDEN


def test_the_precise_render_names_its_pickers_and_an_approximate_one_none() -> None:
    found = precise_router((GOLDEN / "gpu-vllm-native-cpu-precise" / "resources.json").read_text())
    assert found is not None
    namespace, router = found
    assert namespace == "llm-d-tiered-prefix-cache"
    assert router["epp"]["replicas"] == 2 and router["tokenizer"]["enabled"] is True
    assert precise_router((GOLDEN / "gpu-vllm-native-cpu" / "resources.json").read_text()) is None
