"""KEDA's objects against KEDA's own CRDs (strict), their PromQL through a real parser, the chart's values
against the chart's values file, and the pin against the fixtures it was checked with."""

from __future__ import annotations

from typing import Any

import promql_parser
import pytest
import yaml

from components.catalog import versions
from components.formulas import scale_down
from components.specs import keda, promql, router_values, security
from scripts import refresh_fixtures
from tests.helpers import SCHEMAS, UPSTREAM, validate

NS, POOL, MODEL = "llm-d-tiered-prefix-cache", "tiered-prefix-cache", "Qwen/Qwen3-32B"
OPERATOR = keda.prometheus_operator_source("http://prometheus-operated.monitoring.svc:9090/")
GMP = keda.gke_managed_prometheus_source("my-project")


def _object(kind: keda.WorkloadKind = "Deployment", source: keda.MetricsSource = OPERATOR, **how: Any) -> Any:
    mode = how.pop("mode", "queue")
    return keda.scaled_object(
        kind,
        "qwen3-32b-decode",
        NS,
        how.pop("min_replicas", 1),
        how.pop("max_replicas", 8),
        how.pop("rules", scale_down.derived_behavior(420)),
        keda.triggers(mode, keda.Thresholds(), source, NS, POOL, MODEL),
        **how,
    )


# PromQL


def _selector(query: str) -> tuple[str, str, dict[str, str]]:
    """(aggregation, metric, matchers) of `agg(metric{...})`, read by the parser."""
    node = promql_parser.parse(query)
    assert isinstance(node, promql_parser.AggregateExpr)
    inner = node.expr
    assert isinstance(inner, promql_parser.VectorSelector)
    matchers = {m.name: m.value for m in inner.matchers.matchers}
    return str(node.op).rsplit(".", 1)[-1].lower(), str(inner.name), matchers


def test_each_signal_reads_the_routers_metric_for_this_stacks_namespace_and_pool() -> None:
    q = keda.queries(NS, POOL, MODEL)
    assert _selector(q["queue"]) == (
        "sum",
        "llm_d_epp_flow_control_queue_size",
        {"namespace": NS, "inference_pool": POOL},
    )
    assert _selector(q["saturation"]) == (
        "max",
        "llm_d_epp_flow_control_pool_saturation",
        {"namespace": NS, "inference_pool": POOL},
    )
    # Running requests carry no inference_pool label: the model names the EPP's requests.
    assert _selector(q["running"]) == ("sum", "llm_d_epp_request_running", {"namespace": NS, "model_name": MODEL})


def test_without_a_pool_the_namespace_alone_selects_the_epp() -> None:
    q = keda.queries(NS, None, MODEL)
    assert _selector(q["queue"])[2] == {"namespace": NS}
    assert _selector(q["saturation"])[2] == {"namespace": NS}


def test_a_label_value_is_quoted_never_read_as_syntax() -> None:
    hostile = 'm"}) or vector(1000) # \\'
    q = keda.queries(NS, hostile, MODEL)
    assert _selector(q["queue"])[2]["inference_pool"] == hostile
    assert promql.selector("x", {}) == "x"


@pytest.mark.parametrize("mode", keda.MODES)
@pytest.mark.parametrize("source", [OPERATOR, GMP], ids=["prometheus-operator", "gke-managed-prometheus"])
def test_every_query_parses(mode: keda.Mode, source: keda.MetricsSource) -> None:
    for trigger in keda.triggers(mode, keda.Thresholds(), source, NS, POOL, MODEL):
        _, metric, _ = _selector(trigger["metadata"]["query"])
        assert metric in keda.EPP_METRICS


# Triggers


def test_the_modes_scale_on_upstreams_signals_with_running_requests_beside_them() -> None:
    names = {m: [t["name"] for t in keda.triggers(m, keda.Thresholds(), OPERATOR, NS, POOL, MODEL)] for m in keda.MODES}
    assert names == {
        "queue": ["epp-queue-size", "epp-running-requests"],
        "saturation": ["epp-pool-saturation", "epp-running-requests"],
        "both": ["epp-queue-size", "epp-pool-saturation", "epp-running-requests"],
    }
    with pytest.raises(ValueError, match="unknown autoscaling trigger 'wva'"):
        keda.signals("wva")  # type: ignore[arg-type]


def test_upstreams_thresholds_are_the_defaults() -> None:
    rows = {
        t["name"]: (t["metricType"], t["metadata"]["threshold"])
        for t in keda.triggers("both", keda.Thresholds(), OPERATOR, NS, POOL, MODEL)
    }
    assert rows == {
        "epp-queue-size": ("AverageValue", "1"),
        "epp-pool-saturation": ("Value", "0.7"),  # a pool-wide ratio: see the module docstring
        "epp-running-requests": ("AverageValue", "16"),
    }


def test_the_replay_sees_the_same_triggers_the_scaled_object_declares() -> None:
    thresholds = keda.Thresholds(queue=2, running=24, saturation=0.8)
    declared = keda.triggers("both", thresholds, OPERATOR, NS, POOL, MODEL)
    modeled = keda.hpa_triggers("both", thresholds)
    assert [(t["metricType"], t["metadata"]["threshold"]) for t in declared] == [
        (m.metric_type, f"{m.target:g}") for m in modeled
    ]


@pytest.mark.parametrize("field", ["queue", "running", "saturation"])
def test_a_threshold_must_be_positive(field: str) -> None:
    keda.Thresholds(**{field: 0.001})
    with pytest.raises(ValueError, match=f"the {field} threshold must be positive"):
        keda.Thresholds(**{field: 0})


# Where the metrics live


def test_the_prometheus_operator_is_a_plain_url_without_authentication() -> None:
    assert OPERATOR.server_address == "http://prometheus-operated.monitoring.svc:9090"
    assert keda.trigger_authentication(OPERATOR, NS) is None
    for trigger in keda.triggers("both", keda.Thresholds(), OPERATOR, NS, POOL, MODEL):
        assert "authenticationRef" not in trigger
    with pytest.raises(ValueError, match="is a URL"):
        keda.prometheus_operator_source("prometheus-operated:9090")


def test_gke_managed_prometheus_is_its_query_frontend_with_the_operators_gcp_identity() -> None:
    assert GMP.server_address == "https://monitoring.googleapis.com/v1/projects/my-project/location/global/prometheus"
    auth = keda.trigger_authentication(GMP, NS)
    assert auth is not None
    validate(auth)
    assert auth["spec"] == {"podIdentity": {"provider": "gcp"}}
    assert auth["metadata"] == {"name": keda.GMP_AUTH_NAME, "namespace": NS}
    for trigger in keda.triggers("both", keda.Thresholds(), GMP, NS, POOL, MODEL):
        assert trigger["authenticationRef"] == {"name": keda.GMP_AUTH_NAME, "kind": "TriggerAuthentication"}
    with pytest.raises(ValueError, match="needs the project"):
        keda.gke_managed_prometheus_source("")


# The ScaledObject against KEDA's CRD


@pytest.mark.parametrize("kind", ["Deployment", "LeaderWorkerSet"])
@pytest.mark.parametrize("mode", keda.MODES)
@pytest.mark.parametrize("source", [OPERATOR, GMP], ids=["prometheus-operator", "gke-managed-prometheus"])
def test_every_scaled_object_validates_strictly(
    kind: keda.WorkloadKind, mode: keda.Mode, source: keda.MetricsSource
) -> None:
    validate(_object(kind, source, mode=mode, object_labels={"llm-d.ai/guide": "tiered-prefix-cache"}))


def test_the_strict_schema_rejects_a_field_keda_does_not_have() -> None:
    import jsonschema

    obj = _object()
    obj["spec"]["maxReplicas"] = 8
    with pytest.raises(jsonschema.ValidationError):
        validate(obj)


def test_the_target_is_the_workload_through_its_scale_subresource() -> None:
    assert _object("Deployment")["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "qwen3-32b-decode",
    }
    assert _object("LeaderWorkerSet")["spec"]["scaleTargetRef"]["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    with pytest.raises(ValueError, match="not a StatefulSet"):
        _object("StatefulSet")  # type: ignore[arg-type]


def test_a_leaderworkerset_has_the_scale_subresource_the_hpa_needs() -> None:
    (crd,) = yaml.safe_load_all((SCHEMAS / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    assert version["subresources"]["scale"] == {
        "labelSelectorPath": ".status.hpaPodSelector",
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
    }


def test_the_hpa_behavior_is_the_derived_rules() -> None:
    spec = _object(rules=scale_down.derived_behavior(420))["spec"]
    assert spec["advanced"]["horizontalPodAutoscalerConfig"] == {
        "name": "keda-hpa-qwen3-32b-decode",
        "behavior": {
            "scaleUp": {
                "stabilizationWindowSeconds": 300,
                "selectPolicy": "Max",
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
            },
            "scaleDown": {
                "stabilizationWindowSeconds": 840,
                "selectPolicy": "Max",
                "policies": [{"type": "Percent", "value": 50, "periodSeconds": 420}],
            },
        },
    }
    assert (spec["pollingInterval"], spec["cooldownPeriod"]) == (15, 300)


@pytest.mark.parametrize(("low", "high"), [(1, 1), (1, 8), (8, 8)])
def test_replica_bounds_that_hold(low: int, high: int) -> None:
    spec = _object(min_replicas=low, max_replicas=high)["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (low, high)


@pytest.mark.parametrize(("low", "high"), [(0, 8), (9, 8), (2, 1)])
def test_replica_bounds_that_do_not(low: int, high: int) -> None:
    with pytest.raises(ValueError, match="1 <= min_replicas <= max_replicas"):
        _object(min_replicas=low, max_replicas=high)


def test_a_scaled_object_needs_a_trigger() -> None:
    with pytest.raises(ValueError, match="at least one trigger"):
        keda.scaled_object("Deployment", "w", NS, 1, 2, scale_down.UPSTREAM_BEHAVIOR, [])


# KEDA's chart


def _chart_defaults() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((SCHEMAS / "keda-chart" / "v2.20.2" / "values.yaml").read_text())
    return values


# Values the chart renders whole (toYaml): their keys are Kubernetes fields, checked against Kubernetes' schema.
PASSED_THROUGH = ("securityContext", "podSecurityContext", "resources")


def _unknown_paths(ours: dict[str, Any], chart: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in ours.items():
        path = f"{prefix}{key}"
        if key not in chart:
            out.append(path)
        elif isinstance(value, dict) and isinstance(chart[key], dict) and prefix.split(".")[0] not in PASSED_THROUGH:
            out += _unknown_paths(value, chart[key], f"{path}.")
    return out


def test_every_value_set_is_one_the_chart_has() -> None:
    ours = keda.chart_values(gcp_service_account="keda@my-project.iam.gserviceaccount.com")
    assert _unknown_paths(ours, _chart_defaults()) == []
    assert _unknown_paths({"image": {"kedaa": {}}}, _chart_defaults()) == ["image.kedaa"]


def test_the_chart_renders_the_pinned_images_from_its_own_repositories() -> None:
    defaults = _chart_defaults()["image"]
    values = keda.chart_values()["image"]
    for key in ("keda", "metricsApiServer", "webhooks"):
        assert (values[key]["registry"], values[key]["repository"]) == (
            defaults[key]["registry"],
            defaults[key]["repository"],
        )
        assert values[key]["tag"] == versions.KEDA_VERSION
    assert values["pullPolicy"] == "IfNotPresent"


def test_a_mirror_rewrites_each_image_the_chart_renders() -> None:
    def mirror(image: str) -> str:
        return f"us-docker.pkg.dev/p/{image.replace('ghcr.io', 'ghcr-io')}"

    values = keda.chart_values(mirror=mirror)["image"]
    rendered = {k: f"{v['registry']}/{v['repository']}:{v['tag']}" for k, v in values.items() if k != "pullPolicy"}
    assert rendered == {k: mirror(i) for k, i in versions.keda_images(versions.KEDA_VERSION).items()}


def test_keda_is_hardened_like_the_programs_own_containers() -> None:
    values = keda.chart_values()
    plain = security.container_context(security.Subject({}, {}, {"name": "x"}))
    for component in ("operator", "metricServer", "webhooks"):
        context = values["securityContext"][component]
        assert context == {**plain, "readOnlyRootFilesystem": True}
        assert context["capabilities"] == {"drop": ["ALL"]} and context["allowPrivilegeEscalation"] is False
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": component},
            "spec": {
                "securityContext": values["podSecurityContext"][component],
                "containers": [
                    {"name": "c", "image": "i", "securityContext": context, "resources": values["resources"][component]}
                ],
            },
        }
        validate(pod)
        assert values["resources"][component]["limits"]["memory"] == keda.KEDA_MEMORY_LIMIT


def test_workload_identity_annotates_the_operator_only_when_asked() -> None:
    assert "podIdentity" not in keda.chart_values()
    assert keda.chart_values(gcp_service_account="k@p.iam.gserviceaccount.com")["podIdentity"] == {
        "gcp": {"enabled": True, "gcpIAMServiceAccount": "k@p.iam.gserviceaccount.com"}
    }


def test_the_pin_is_the_release_the_fixtures_were_taken_from() -> None:
    rows = refresh_fixtures.rows((UPSTREAM / "SOURCES.md").read_text())
    keda_rows = [r for r in rows if r.file.startswith(("schemas/keda/", "schemas/keda-chart/"))]
    assert len(keda_rows) == 3
    assert {r.file.split("/")[2] for r in keda_rows} == {f"v{versions.KEDA_VERSION}"}


# The router's side


def test_flow_control_is_turned_on_once_and_nothing_else_changes() -> None:
    picker = router_values.endpoint_picker_config("llm-d.ai/v1", 1000)
    assert "featureGates" not in picker
    on = keda.with_flow_control(picker)
    assert on["featureGates"] == ["flowControl"]
    assert {k: v for k, v in on.items() if k != "featureGates"} == picker
    assert keda.with_flow_control(on) == on
    assert keda.with_flow_control({**picker, "featureGates": ["dataLayer"]})["featureGates"] == [
        "dataLayer",
        "flowControl",
    ]
    assert "featureGates" not in picker  # the input is not changed


@pytest.mark.parametrize("mode", keda.MODES)
def test_every_mode_reads_a_metric_only_flow_control_exports(mode: keda.Mode) -> None:
    metrics = {
        _selector(t["metadata"]["query"])[1] for t in keda.triggers(mode, keda.Thresholds(), OPERATOR, NS, POOL, MODEL)
    }
    assert metrics & set(keda.FLOW_CONTROL_METRICS)
