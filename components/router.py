"""Router: the llm-d router (EPP + Envoy sidecar) from the upstream `llm-d-router-standalone` chart.

The chart also creates the InferencePool named after the release, so the GAIE CRDs must exist first.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import labels, versions
from components.k8s_objects import child_options, declare_all, force_field_ownership
from components.specs.router_values import VALUES_CHECKSUM_ANNOTATION, router_endpoint, values_checksum
from components.specs.security import harden_chart_object


@dataclass(frozen=True)
class RouterArgs:
    release: str
    namespace: pulumi.Input[str]
    chart: str
    version: str
    values: dict[str, Any]
    network_policies: list[dict[str, Any]] = field(default_factory=list)  # for the pods the chart renders


# The chart's objects that carry pod templates.
_HARDENED_TYPES = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet", "kubernetes:apps/v1:DaemonSet")


def roll_on_values_change(
    checksum: str,
) -> Callable[[pulumi.ResourceTransformArgs], pulumi.ResourceTransformResult | None]:
    """The chart's EPP Deployment with the values' digest on its pod template, so a values change rolls it."""

    def roll_epp_on_values_change(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ != "kubernetes:apps/v1:Deployment":
            return None
        props: dict[str, Any] = copy.deepcopy(dict(args.props))
        metadata = props.setdefault("spec", {}).setdefault("template", {}).setdefault("metadata", {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}), VALUES_CHECKSUM_ANNOTATION: checksum}
        return pulumi.ResourceTransformResult(props=props, opts=args.opts)

    return roll_epp_on_values_change


def harden_chart_pods(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """The chart's workloads hardened as the program's own are (components/specs/security.py), applied to
    each object the chart renders before the engine registers it."""
    if args.type_ not in _HARDENED_TYPES:
        return None
    props = {"kind": args.type_.rsplit(":", 1)[-1], **dict(args.props)}
    return pulumi.ResourceTransformResult(props=harden_chart_object(props), opts=args.opts)


class Router(pulumi.ComponentResource):
    release: str
    endpoint: pulumi.Output[str]

    def __init__(self, name: str, args: RouterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:router:Router", name, None, opts)
        declare_all(self, name, args.network_policies, opts)
        chart_inputs: dict[str, Any] = {
            "chart": args.chart,
            # A packaged chart on disk carries its own version; Helm refuses one for a local path.
            "version": None if versions.is_local_chart(args.chart) else args.version,
            # The Helm release: objects are named `labels.router_name(release)`, the pool `<release>`.
            "name": args.release,
            "namespace": args.namespace,
            "values": args.values,
        }
        self.chart = k8s.helm.v4.Chart(
            f"{name}-chart",
            k8s.helm.v4.ChartArgs(**chart_inputs),
            opts=pulumi.ResourceOptions.merge(
                child_options(self, opts),
                pulumi.ResourceOptions(
                    transforms=[
                        harden_chart_pods,
                        roll_on_values_change(values_checksum(args.values)),
                        force_field_ownership,
                    ]
                ),
            ),
        )
        self.release = args.release
        self.endpoint = pulumi.Output.from_input(args.namespace).apply(
            lambda namespace: router_endpoint(args.release, namespace)
        )
        self.register_outputs({"endpoint": self.endpoint, labels.ROUTER_CHART_OUTPUT: chart_inputs})
