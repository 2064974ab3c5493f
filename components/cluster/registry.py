"""ArtifactRegistryMirror: an Artifact Registry remote repository (a pull-through cache) per upstream registry
the stack pulls from, readable by the nodes, so GKE's image streaming can serve every image."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.specs import images


@dataclass(frozen=True)
class ArtifactRegistryMirrorArgs:
    project: str
    region: str
    registries: list[str]  # upstream registries, e.g. docker.io, ghcr.io


class ArtifactRegistryMirror(pulumi.ComponentResource):
    def __init__(self, name: str, args: ArtifactRegistryMirrorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:ArtifactRegistryMirror", name, None, opts)
        api = gcp.projects.Service(
            f"{name}-api",
            project=args.project,
            service="artifactregistry.googleapis.com",
            disable_on_destroy=False,  # other workloads of the project may use it
            opts=pulumi.ResourceOptions(parent=self),
        )
        # The nodes pull as the project's default compute service account (the pools set no other).
        number = gcp.organizations.get_project_output(project_id=args.project).number
        member = number.apply(lambda n: f"serviceAccount:{n}-compute@developer.gserviceaccount.com")
        for registry in args.registries:
            repo_id = images.repository_id(registry)
            repository = gcp.artifactregistry.Repository(
                f"{name}-{repo_id}",
                **images.remote_repository_args(registry, args.region, args.project),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[api]),
            )
            gcp.artifactregistry.RepositoryIamMember(
                f"{name}-{repo_id}-nodes",
                project=args.project,
                location=args.region,
                repository=repository.repository_id,
                role="roles/artifactregistry.reader",
                member=member,
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({})
