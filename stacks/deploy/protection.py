"""State that cannot be lost by accident, and cloud resources given the time they take to create.

The plan decides, per resource type (and for the tier's claim, per name): `protect` on the state a
rename or `pulumi destroy` would otherwise delete (the Lustre instance and its volume, the EFS file
system, the filesystem tier's claim, a created cluster), and `customTimeouts.create` above the
documented worst case of slow cloud creations. `compose` applies it to every resource of the stack
through one stack transform (`pulumi.runtime.register_resource_transform`), so components keep
declaring resources only.

`protect: false` in the stack config removes the protection on purpose (then `pulumi up`, and
`pulumi destroy` may delete them).
"""

from __future__ import annotations

from collections.abc import Callable

import pulumi

from components.specs.servers.base import FILES_STORAGE_CLAIM
from stacks.planning.cold_starts import cloud_create_timeout

PROTECTED_TYPES = (
    "gcp:lustre/instance:Instance",
    "aws:efs/fileSystem:FileSystem",
    "gcp:container/cluster:Cluster",
    "aws:eks/cluster:Cluster",
)


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


def lifecycle_transform(protect: bool) -> Transform:
    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        extra = pulumi.ResourceOptions()
        changed = False
        if protects(args.type_, args.name, protect):
            extra.protect, changed = True, True
        timeout = cloud_create_timeout(args.type_)
        if timeout is not None:
            extra.custom_timeouts, changed = pulumi.CustomTimeouts(create=timeout), True
        if not changed:
            return None
        return pulumi.ResourceTransformResult(props=args.props, opts=pulumi.ResourceOptions.merge(args.opts, extra))

    return transform
