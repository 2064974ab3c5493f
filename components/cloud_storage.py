"""The filesystem tier's backend, created with the stack: GCP Managed Lustre or AWS EFS.

Each creates the cloud file system, what it needs from the network, and the Kubernetes objects that
reach it (StorageClass; for Lustre a PersistentVolume bound to the managed instance). The tier's
claim itself (`llm-d-kv-cache-storage`) stays with the cache stack.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from components.k8s_objects import declare
from components.specs import eks_cluster, storage

PSA_PREFIX = 20  # the private services access range Managed Lustre is reached through


@dataclass(frozen=True)
class LustreArgs:
    name: str
    project: str
    region: str
    zone: str
    network: str
    capacity_gib: int
    throughput: int
    filesystem: str
    volume_name: str
    claim: tuple[str, str]  # namespace, name of the claim the volume is reserved for


class LustreStorage(pulumi.ComponentResource):
    """Managed Lustre: private services access, the LNet firewall rule, the instance, its StorageClass and volume."""

    def __init__(self, name: str, args: LustreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:storage:LustreStorage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        network = f"projects/{args.project}/global/networks/{args.network}"
        psa_range = gcp.compute.GlobalAddress(
            f"{name}-psa",
            name=f"{args.name}-lustre-psa",
            project=args.project,
            network=network,
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            prefix_length=PSA_PREFIX,
            opts=child,
        )
        peering = gcp.servicenetworking.Connection(
            f"{name}-peering",
            network=network,
            service="servicenetworking.googleapis.com",
            reserved_peering_ranges=[psa_range.name],
            opts=child,
        )
        gcp.compute.Firewall(  # Lustre servers open LNet connections back to the clients
            f"{name}-lnet",
            name=f"{args.name}-lustre-lnet",
            project=args.project,
            network=network,
            direction="INGRESS",
            source_ranges=[pulumi.Output.concat(psa_range.address, f"/{PSA_PREFIX}")],
            allows=[{"protocol": "tcp", "ports": storage.LUSTRE_PORTS}],
            opts=child,
        )
        instance = gcp.lustre.Instance(
            f"{name}-instance",
            instance_id=f"{args.name}-kv-cache",
            project=args.project,
            location=args.zone,
            network=network,
            capacity_gib=str(args.capacity_gib),
            per_unit_storage_throughput=str(args.throughput),
            filesystem=args.filesystem,
            gke_support_enabled=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[peering]),
        )
        k8s_child = pulumi.ResourceOptions(parent=self, depends_on=[instance])
        declare(f"{name}-class", storage.lustre_storage_class(network, args.zone, args.throughput), k8s_child)
        ip = instance.mount_point.apply(lambda mount: str(mount or "").split("@", 1)[0])
        self.volume = declare(
            f"{name}-volume",
            storage.lustre_volume(
                args.volume_name,
                instance.instance_id.apply(lambda i: storage.lustre_volume_handle(args.project, args.zone, str(i))),
                ip,
                args.filesystem,
                f"{args.capacity_gib}Gi",
                args.claim,
            ),
            k8s_child,
        )
        self.register_outputs({})


@dataclass(frozen=True)
class EfsArgs:
    name: str
    vpc_id: pulumi.Input[str]
    subnet_ids: list[pulumi.Input[str]]
    node_security_group_id: pulumi.Input[str]
    cluster_name: pulumi.Input[str]
    oidc_provider_arn: pulumi.Input[str]
    oidc_issuer: pulumi.Input[str]
    throughput_mode: str = "elastic"  # components/catalog/storage_backends.py AWS_EFS.modes
    provisioned_mibps: int | None = None  # provisioned: MiB/s (the plan's)


class EfsStorage(pulumi.ComponentResource):
    """EFS: the file system, a mount target per node subnet behind an NFS-only security group, the EFS
    CSI driver (an EKS add-on with its IRSA role) and the `efs-sc` StorageClass."""

    def __init__(self, name: str, args: EfsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:storage:EfsStorage", name, None, opts)
        tags = {"llm-d.ai/stack": args.name}
        file_system, targets = self._file_system(name, args, tags)
        driver = self._csi_driver(name, args, tags)
        declare(
            f"{name}-class",
            storage.efs_storage_class(file_system.id),
            pulumi.ResourceOptions(parent=self, depends_on=[driver, *targets]),
        )
        self.register_outputs({"fileSystemId": file_system.id})

    def _file_system(
        self, name: str, args: EfsArgs, tags: dict[str, str]
    ) -> tuple[aws.efs.FileSystem, list[aws.efs.MountTarget]]:
        """The file system and a mount target per node subnet, reachable from the nodes over NFS only."""
        child = pulumi.ResourceOptions(parent=self)
        file_system = aws.efs.FileSystem(
            f"{name}-fs",
            encrypted=True,
            performance_mode="generalPurpose",
            throughput_mode=args.throughput_mode,
            provisioned_throughput_in_mibps=args.provisioned_mibps,
            tags=tags,
            opts=child,
        )
        nfs = aws.ec2.SecurityGroup(
            f"{name}-nfs",
            vpc_id=args.vpc_id,
            description="NFS from the cluster's nodes to the KV-cache file system",
            ingress=[
                {
                    "protocol": "tcp",
                    "from_port": storage.NFS_PORT,
                    "to_port": storage.NFS_PORT,
                    "security_groups": [args.node_security_group_id],
                }
            ],
            tags=tags,
            opts=child,
        )
        targets = [
            aws.efs.MountTarget(
                f"{name}-mount-{i}",
                file_system_id=file_system.id,
                subnet_id=subnet,
                security_groups=[nfs.id],
                opts=child,
            )
            for i, subnet in enumerate(args.subnet_ids)
        ]
        return file_system, targets

    def _csi_driver(self, name: str, args: EfsArgs, tags: dict[str, str]) -> aws.eks.Addon:
        """The EFS CSI driver add-on, with the IRSA role its controller assumes."""
        child = pulumi.ResourceOptions(parent=self)
        namespace, service_account = storage.EFS_CSI_SERVICE_ACCOUNT
        role = aws.iam.Role(
            f"{name}-csi",
            assume_role_policy=pulumi.Output.all(args.oidc_provider_arn, args.oidc_issuer).apply(
                lambda v: eks_cluster.irsa_policy(v[0], v[1], namespace, service_account)
            ),
            tags=tags,
            opts=child,
        )
        attachment = aws.iam.RolePolicyAttachment(
            f"{name}-csi", role=role.name, policy_arn=storage.EFS_CSI_POLICY, opts=child
        )
        return aws.eks.Addon(
            f"{name}-csi-driver",
            cluster_name=args.cluster_name,
            addon_name="aws-efs-csi-driver",
            service_account_role_arn=role.arn,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[attachment]),
        )
