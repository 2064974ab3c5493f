"""GatewayFront: the one Gateway in front of a cluster's serving stacks, in its own namespace, with the
inference extension's body-based routing (BBR, pinned chart) and the NetworkPolicy that admits only the
Gateway's data plane to it. Specs: components/specs/gateway.py, components/specs/bbr.py."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import versions
from components.k8s_objects import child_options, declare_all, force_field_ownership
from components.manifest import Manifest
from components.specs import bbr


@dataclass(frozen=True)
class GatewayFrontArgs:
    namespace: Manifest
    gateway: Manifest
    bbr_values: Manifest | None = None  # None: no body-based routing
    bbr_policy: Manifest | None = None
    bbr_chart_file: str | None = None  # the chart packaged on the deploying machine instead of the OCI pull


class GatewayFront(pulumi.ComponentResource):
    def __init__(self, name: str, args: GatewayFrontArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:gateway:GatewayFront", name, None, opts)
        namespace = args.namespace["metadata"]["name"]
        objects = declare_all(self, name, [args.namespace, args.gateway], opts)
        if args.bbr_values is not None:
            policies = declare_all(
                self, name, [args.bbr_policy] if args.bbr_policy else [], child_options(self, opts, *objects)
            )
            k8s.helm.v4.Chart(
                f"{name}-bbr",
                k8s.helm.v4.ChartArgs(
                    chart=args.bbr_chart_file or versions.BBR_CHART,
                    version=None if args.bbr_chart_file else versions.BBR_VERSION,
                    namespace=namespace,
                    values=args.bbr_values,
                    skip_crds=True,
                ),
                opts=pulumi.ResourceOptions.merge(
                    child_options(self, opts, *objects, *policies),
                    pulumi.ResourceOptions(transforms=[_harden, force_field_ownership]),
                ),
            )
        self.register_outputs({})


def _harden(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """BBR's Deployment gets the hardening its chart has no values for (components/specs/bbr.py)."""
    if args.type_ != "kubernetes:apps/v1:Deployment":
        return None
    props = {"kind": "Deployment", **dict(args.props)}
    return pulumi.ResourceTransformResult(props=bbr.harden_bbr_object(props), opts=args.opts)
