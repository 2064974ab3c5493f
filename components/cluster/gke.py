"""GkeCluster: a private, Workload-Identity GKE cluster with a system pool and accelerator node pools."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.specs import gke_cluster
from components.specs.clusters import PoolSpec


@dataclass(frozen=True)
class GkeClusterArgs:
    name: str
    project: str
    region: str
    zone: str
    network: str
    subnetwork: str | None
    release_channel: str
    master_cidr: str
    system_machine_type: str
    system_node_count: int
    cloud_nat: bool
    deletion_protection: bool
    lustre_csi: bool
    pools: list[PoolSpec] = field(default_factory=list)


class GkeCluster(pulumi.ComponentResource):
    kubeconfig: pulumi.Output[str]  # secret
    node_pools: dict[str, list[pulumi.Resource]]  # by pool key (TPU multi-host: one per slice)

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:GkeCluster", name, None, opts)
        cluster = gcp.container.Cluster(
            f"{name}-cluster",
            **gke_cluster.gke_cluster_args(
                args.name,
                args.project,
                args.region,
                args.network,
                args.subnetwork,
                args.release_channel,
                args.master_cidr,
                args.lustre_csi,
                args.deletion_protection,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=self._cloud_nat(name, args)),
        )
        self.node_pools = self._node_pools(name, args, cluster)
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.endpoint, cluster.master_auth.cluster_ca_certificate).apply(
                lambda v: gke_cluster.gke_kubeconfig(args.name, v[0], v[1])
            )
        )
        self.register_outputs({"kubeconfig": self.kubeconfig})

    def _cloud_nat(self, name: str, args: GkeClusterArgs) -> list[pulumi.Resource]:
        """Private nodes reach docker.io, ghcr.io and Hugging Face through Cloud NAT (when asked for)."""
        if not args.cloud_nat:
            return []
        child = pulumi.ResourceOptions(parent=self)
        router = gcp.compute.Router(
            f"{name}-router",
            name=f"{args.name}-nat",
            project=args.project,
            region=args.region,
            network=args.network,
            opts=child,
        )
        nat = gcp.compute.RouterNat(
            f"{name}-nat",
            name=f"{args.name}-nat",
            project=args.project,
            region=args.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            opts=child,
        )
        return [nat]

    def _node_pools(
        self, name: str, args: GkeClusterArgs, cluster: gcp.container.Cluster
    ) -> dict[str, list[pulumi.Resource]]:
        """The system pool, then the accelerator pools by key (a TPU multi-host pool: one per slice)."""
        pool_opts = pulumi.ResourceOptions(parent=self)
        system = gcp.container.NodePool(
            f"{name}-system",
            cluster=cluster.name,
            project=args.project,
            **gke_cluster.gke_system_pool_args(
                f"{args.name}-system", args.region, args.system_machine_type, args.system_node_count
            ),
            opts=pool_opts,
        )
        out: dict[str, list[pulumi.Resource]] = {"system": [system]}
        streaming = (
            [self._image_streaming_api(name, args.project)] if any(p.image_streaming for p in args.pools) else []
        )
        for pool in args.pools:
            out.setdefault(pool.key, []).append(
                gcp.container.NodePool(
                    f"{name}-{pool.name.removeprefix(args.name + '-')}",
                    cluster=cluster.name,
                    project=args.project,
                    **gke_cluster.gke_accelerator_pool_args(pool, args.region, args.zone),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=streaming if pool.image_streaming else []),
                )
            )
        return out

    def _image_streaming_api(self, name: str, project: str) -> gcp.projects.Service:
        """Image streaming needs the Container File System API (GKE: use image streaming, requirements)."""
        return gcp.projects.Service(
            f"{name}-containerfilesystem-api",
            project=project,
            service=gke_cluster.IMAGE_STREAMING_API,
            disable_on_destroy=False,  # other clusters of the project may stream images too
            opts=pulumi.ResourceOptions(parent=self),
        )
