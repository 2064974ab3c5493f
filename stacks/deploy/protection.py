"""State that cannot be lost by accident, and cloud resources given the time they take to create.

The plan decides, per resource type (and for the tier's claim, per name): `protect` on the state a
rename or `pulumi destroy` would otherwise delete (the Lustre instance and its volume, the EFS file
system, the filesystem tier's claim, a created cluster), and `customTimeouts.create` above the
documented worst case of slow cloud creations. `compose` applies it to every resource of the stack
through one stack transform (`pulumi.runtime.register_resource_transform`), so components keep
declaring resources only.

`protect: false` in the stack config removes the protection on purpose (then `pulumi up`, and
`pulumi destroy` may delete them).

Every Kubernetes object the stack declares is also applied with `force` (`force_field_ownership`): the
stack is its only owner, and an update killed while it created objects leaves them owned by that run's
field manager, so that the next change of any of their fields would fail on a field conflict (measured by
`./run e2e --faults`). A `...Patch` resource shares its object with other owners by design and is left alone.
"""

from __future__ import annotations

from collections.abc import Callable

import pulumi

from components.catalog.cloud_resources import CLOUD_RESOURCES
from components.k8s_objects import force_field_ownership
from components.specs.servers.base import FILES_STORAGE_CLAIM
from stacks.planning.cold_starts import cloud_create_timeout

PROTECTED_TYPES = tuple(token for token, r in CLOUD_RESOURCES.items() if r.protected)


def protects(resource_type: str, name: str, protect: bool) -> bool:
    """Whether a resource is protected: the cloud state above, the tier's claim and its Lustre volume."""
    if not protect:
        return False
    if resource_type in PROTECTED_TYPES:
        return True
    if resource_type == "kubernetes:core/v1:PersistentVolumeClaim":
        return name.endswith(f"-{FILES_STORAGE_CLAIM}")
    return resource_type == "kubernetes:core/v1:PersistentVolume" and name.endswith("-lustre-volume")


Transform = Callable[[pulumi.ResourceTransformArgs], pulumi.ResourceTransformResult | None]


def owns_whole_object(resource_type: str) -> bool:
    """A Kubernetes object the stack applies whole (not a chart or a file of objects, not a Patch)."""
    return (
        resource_type.startswith("kubernetes:")
        and not resource_type.startswith(("kubernetes:helm.sh/", "kubernetes:yaml/"))
        and not resource_type.endswith("Patch")
    )


def lifecycle_transform(protect: bool) -> Transform:
    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        extra = pulumi.ResourceOptions()
        changed = False
        props = args.props
        if owns_whole_object(args.type_):
            forced = force_field_ownership(args)
            props, changed = (forced.props, True) if forced is not None else (props, changed)
        if protects(args.type_, args.name, protect):
            extra.protect, changed = True, True
        timeout = cloud_create_timeout(args.type_)
        if timeout is not None:
            extra.custom_timeouts, changed = pulumi.CustomTimeouts(create=timeout), True
        if not changed:
            return None
        return pulumi.ResourceTransformResult(props=props, opts=pulumi.ResourceOptions.merge(args.opts, extra))

    return transform
