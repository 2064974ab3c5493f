"""Declare a Kubernetes manifest (a plain dict from `components.specs`) as the matching Pulumi resource."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

# API group -> pulumi_kubernetes module, for the built-in kinds the specs produce.
_GROUP_MODULES = {
    "": "core",
    "apps": "apps",
    "batch": "batch",
    "networking.k8s.io": "networking",
    "policy": "policy",
    "rbac.authorization.k8s.io": "rbac",
    "resource.k8s.io": "resource",
    "storage.k8s.io": "storage",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def resource_class(api_version: str, kind: str) -> type[pulumi.CustomResource] | None:
    """The typed pulumi_kubernetes class of a built-in kind (None for custom resources)."""
    group, _, version = api_version.rpartition("/")
    module_name = _GROUP_MODULES.get(group)
    if module_name is None:
        return None
    module = getattr(getattr(k8s, module_name), version, None)
    cls = getattr(module, kind, None) if module else None
    return cls if isinstance(cls, type) and issubclass(cls, pulumi.CustomResource) else None


def declare(resource_name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Typed resources for built-in kinds, `CustomResource` for the rest.

    Names are explicit (`metadata.name`). pulumi-kubernetes itself deletes first when a replacement keeps
    the name and namespace (two objects with one name cannot coexist) and creates first otherwise, so no
    object asks for `delete_before_replace`: a replacement that can overlap does.
    """
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    body = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    cls = resource_class(api_version, kind)
    if cls is not None:
        return cls(resource_name, opts=opts, **{_snake(k): v for k, v in body.items()})
    return k8s.apiextensions.CustomResource(resource_name, api_version=api_version, kind=kind, opts=opts, **body)


def declare_all(
    parent: pulumi.Resource,
    prefix: str,
    manifests: list[dict[str, Any]],
    opts: pulumi.ResourceOptions | None,
    ignore_changes: Mapping[str, Sequence[str]] | None = None,
) -> list[pulumi.CustomResource]:
    """Each manifest as a child of `parent`, named `<prefix>-<object name>`; `ignore_changes` names, by kind,
    the fields another controller owns once the object exists (an autoscaler's `spec.replicas`).

    Names are stable functions of identity, never of sizes, so a size change updates in place; the
    URN also carries the type, so a Service and a Deployment may share a name.
    """
    out: list[pulumi.CustomResource] = []
    for manifest in manifests:
        name = f"{prefix}-{manifest['metadata']['name']}"
        child = child_options(parent, opts, *out)
        ignored = (ignore_changes or {}).get(manifest["kind"])
        if ignored:
            child = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=list(ignored)))
        out.append(declare(name, manifest, child))
    return out


def child_options(
    parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, *also: pulumi.Resource
) -> pulumi.ResourceOptions:
    """Options for a component's child: parented, and depending on what the component depends on.

    Stating the component's dependencies on each child puts them in the state's dependency graph,
    so `pulumi destroy` tears children down before what they depend on.
    """
    inherited = opts.depends_on if opts and isinstance(opts.depends_on, list) else []
    return pulumi.ResourceOptions(parent=parent, depends_on=[*inherited, *also])


# pulumi-kubernetes: apply the object with `force`, taking over the fields another field manager holds.
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"


def force_field_ownership(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """The object applied with `force`: the stack is its only owner (the charts' objects through their own
    transforms, the program's through the stack's, stacks/deploy/protection.py). Measured under the real
    engine (`./run e2e --faults`): an update killed while it created objects leaves them on the API server,
    owned by that run's field manager; the next `pulumi up` applies them under a new one, and the API server
    refused the chart's EPP Deployment on its `env[].valueFrom.fieldRef` (an atomic field it defaults) and,
    at the next image change, the model server's Deployment on `.image`, until a hand-made `kubectl` edit."""
    if not args.type_.startswith("kubernetes:") or args.type_.startswith("kubernetes:helm.sh/"):
        return None
    props: dict[str, Any] = copy.deepcopy(dict(args.props))
    metadata = props.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), PATCH_FORCE_ANNOTATION: "true"}
    return pulumi.ResourceTransformResult(props=props, opts=args.opts)
