"""Declare a Kubernetes manifest (a plain dict from `components.specs`) as the matching Pulumi resource."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s


def declare(resource_name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Typed resources for built-in kinds, `CustomResource` for the rest.

    Names are explicit (`metadata.name`), so a change that forces replacement deletes first:
    two objects with one name cannot coexist.
    """
    opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(delete_before_replace=True))
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    body = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    metadata = body["metadata"]
    match (api_version, kind):
        case ("apps/v1", "Deployment"):
            return k8s.apps.v1.Deployment(resource_name, metadata=metadata, spec=body["spec"], opts=opts)
        case ("v1", "Service"):
            return k8s.core.v1.Service(resource_name, metadata=metadata, spec=body["spec"], opts=opts)
        case ("v1", "ConfigMap"):
            return k8s.core.v1.ConfigMap(resource_name, metadata=metadata, data=body.get("data"), opts=opts)
        case ("v1", "ServiceAccount"):
            return k8s.core.v1.ServiceAccount(
                resource_name,
                metadata=metadata,
                automount_service_account_token=body.get("automountServiceAccountToken"),
                opts=opts,
            )
    return k8s.apiextensions.CustomResource(
        resource_name, api_version=api_version, kind=kind, metadata=metadata, spec=body.get("spec"), opts=opts
    )


def child_options(
    parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, *also: pulumi.Resource
) -> pulumi.ResourceOptions:
    """Options for a component's child: parented, and depending on what the component depends on.

    Stating the component's dependencies on each child puts them in the state's dependency graph,
    so `pulumi destroy` tears children down before what they depend on.
    """
    inherited = opts.depends_on if opts and isinstance(opts.depends_on, list) else []
    return pulumi.ResourceOptions(parent=parent, depends_on=[*inherited, *also])
