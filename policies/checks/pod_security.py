"""Rules over each pod's security and resources: requests set, privilege and root only with an
exemption (components/specs/security.py), hardened contexts, no host namespaces or paths beyond the
allowed, tokens only for API access and the cache annotator's rights no wider than its job (the right to patch pods
is the right to reorder every scale-in), the HF token from a Secret."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from components.catalog import labels
from components.specs import mooncake, security
from policies.checks.inventory import (
    holds_profile_devices,
    namespace_of,
)
from policies.checks.rule_types import NoConfig, Settings, Violation, setting
from policies.resources import (
    Pod,
    Resource,
    env,
    pods,
)


def resource_requests(resources: list[Resource], _: NoConfig) -> list[Violation]:
    return [
        Violation(pod.owner, f"container {c.get('name')} has no cpu and memory requests")
        for pod in pods(resources)
        for c in pod.containers()
        if not {"cpu", "memory"} <= set(((c.get("resources") or {}).get("requests")) or {})
    ]


PRIVILEGED_ALLOWED = security.PRIVILEGED_CONTAINERS


@dataclass(frozen=True)
class PrivilegedConfig(Settings):
    allowed_containers: tuple[str, ...] = setting(
        "allowedContainers", tuple(PRIVILEGED_ALLOWED), "containers that may run privileged"
    )


def privileged_only_where_required(resources: list[Resource], config: PrivilegedConfig) -> list[Violation]:
    """A privileged container is one the config allows by name; one of the program's own names (the TPU node setup,
    the LMCache server) only where it is what its exemption says (its command), not a container renamed like it."""
    allowed = set(config.allowed_containers)

    def exempt(pod: Pod, container: dict[str, Any]) -> bool:
        name = container.get("name")
        if name not in allowed:
            return False
        own = name in PRIVILEGED_ALLOWED
        return not own or any(e.privileged for e in security.exemptions(_subject(pod, container)))

    return [
        Violation(pod.owner, f"container {c.get('name')} is privileged")
        for pod in pods(resources)
        for c in pod.containers()
        if (c.get("securityContext") or {}).get("privileged") and not exempt(pod, c)
    ]


def _subject(pod: Pod, container: dict[str, Any]) -> security.Subject:
    return security.Subject(pod.labels, pod.spec, container)


def _runs_as_root(pod: Pod, container: dict[str, Any]) -> bool:
    """Root unless runAsNonRoot (container, else pod) holds and no runAsUser 0 overrides it."""
    pod_context, context = pod.spec.get("securityContext") or {}, container.get("securityContext") or {}
    user = context.get("runAsUser", pod_context.get("runAsUser"))
    non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
    return user == 0 or non_root is not True


def _root_granted(resources: list[Resource], pod: Pod, container: dict[str, Any]) -> bool:
    """An exemption lets the container run as root; an accelerator profile's (its `root_reason`) only where the
    pod also holds that profile's devices: the profile label alone is no reason."""
    return any(
        e.root and (e.profile is None or holds_profile_devices(resources, pod, e.profile))
        for e in security.exemptions(_subject(pod, container))
    )


def root_only_with_exemption(resources: list[Resource], _: NoConfig) -> list[Violation]:
    return [
        Violation(pod.owner, f"container {c.get('name')} runs as root without an exemption (components.specs.security)")
        for pod in pods(resources)
        for c in pod.containers()
        if _runs_as_root(pod, c) and not _root_granted(resources, pod, c)
    ]


def containers_hardened(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """No privilege escalation, every capability dropped but those an exemption adds back, RuntimeDefault seccomp."""
    out = []
    for pod in pods(resources):
        pod_seccomp = ((pod.spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
        for c in pod.containers():
            context = c.get("securityContext") or {}
            if context.get("privileged"):
                continue  # privileged-containers decides
            granted = {cap for e in security.exemptions(_subject(pod, c)) for cap in e.capabilities}
            capabilities = context.get("capabilities") or {}
            missing = [
                what
                for what, ok in (
                    ("allowPrivilegeEscalation: false", context.get("allowPrivilegeEscalation") is False),
                    ("capabilities.drop [ALL]", "ALL" in (capabilities.get("drop") or [])),
                    ("seccompProfile RuntimeDefault", (context.get("seccompProfile") or {}).get("type", pod_seccomp)
                     in ("RuntimeDefault", "Localhost")),
                    ("no capability beyond its exemptions", set(capabilities.get("add") or []) <= granted),
                )
                if not ok
            ]  # fmt: skip
            if missing:
                out.append(Violation(pod.owner, f"container {c.get('name')} lacks {', '.join(missing)}"))
    return out


def no_host_namespaces(resources: list[Resource], _: NoConfig) -> list[Violation]:
    return [
        Violation(pod.owner, f"pod shares the node's {key[4:].lower()} namespace ({key}: true)")
        for pod in pods(resources)
        for key in ("hostNetwork", "hostPID", "hostIPC")
        if pod.spec.get(key) is True
    ]


HOST_PATHS_ALLOWED = (mooncake.HOST_OFFLOAD_DIR,)


@dataclass(frozen=True)
class HostPathsConfig(Settings):
    allowed_host_paths: tuple[str, ...] = setting(
        "allowedHostPaths", HOST_PATHS_ALLOWED, "host paths a volume may mount (Mooncake's offload directory)"
    )


def host_paths_allowed(resources: list[Resource], config: HostPathsConfig) -> list[Violation]:
    """An allowed path or a directory under one (the Mooncake client mounts its stack's namespace of the
    offload directory); `..` is resolved first, so no path climbs out of an allowed one."""

    def normal(path: Any) -> str:
        return posixpath.normpath("/" + str(path or "").lstrip("/"))

    allowed = {normal(p) for p in config.allowed_host_paths}

    def inside(path: Any) -> bool:
        p = normal(path)
        return any(p == a or p.startswith(a.rstrip("/") + "/") for a in allowed)

    return [
        Violation(pod.owner, f"volume {v.get('name')} mounts host path {v['hostPath'].get('path')}")
        for pod in pods(resources)
        for v in pod.spec.get("volumes") or []
        if "hostPath" in v and not inside(v["hostPath"].get("path"))
    ]


def _bound_service_accounts(resources: list[Resource]) -> set[tuple[str, str]]:
    """(namespace, name) of every ServiceAccount a RoleBinding or ClusterRoleBinding of the stack grants."""
    out = set()
    for r in resources:
        if r.type in (
            "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        ):
            for subject in r.props.get("subjects") or []:
                if subject.get("kind") == "ServiceAccount":
                    out.add((str(subject.get("namespace", namespace_of(r))), str(subject.get("name"))))
    return out


def token_only_for_api_access(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A pod mounts a service-account token only when its account is granted something (it calls the API)."""
    opted_out = {
        (namespace_of(r), str((r.props.get("metadata") or {}).get("name")))
        for r in resources
        if r.type == "kubernetes:core/v1:ServiceAccount" and r.props.get("automountServiceAccountToken") is False
    }
    bound = _bound_service_accounts(resources)
    out = []
    for pod in pods(resources):
        account = (namespace_of(pod.owner), str(pod.spec.get("serviceAccountName") or "default"))
        mounted = pod.spec.get("automountServiceAccountToken")
        if mounted is False or (mounted is None and account in opted_out) or account in bound:
            continue
        out.append(
            Violation(pod.owner, f"pod mounts a token of service account {account[1]}, which is granted nothing")
        )
    return out


def hf_token_from_secret(resources: list[Resource], _: NoConfig) -> list[Violation]:
    return [
        Violation(pod.owner, f"container {c.get('name')} sets HF_TOKEN literally instead of from a Secret")
        for pod in pods(resources)
        for c in pod.containers()
        if "HF_TOKEN" in env(c) and "secretKeyRef" not in (env(c)["HF_TOKEN"].get("valueFrom") or {})
    ]


RBAC = "kubernetes:rbac.authorization.k8s.io/v1"
ROLE, ROLE_BINDING = f"{RBAC}:Role", f"{RBAC}:RoleBinding"
CLUSTER_ROLE_BINDING = f"{RBAC}:ClusterRoleBinding"
ALLOWED = f"{', '.join(labels.CACHE_ANNOTATOR_POD_VERBS)} on the pods of its own namespace"


def _annotator_accounts(resources: list[Resource]) -> set[tuple[str, str]]:
    """(namespace, ServiceAccount) of every pod the stack labels as the cache annotator."""
    return {
        (namespace_of(pod.owner), str(pod.spec.get("serviceAccountName") or "default"))
        for pod in pods(resources)
        if pod.labels.get(labels.WORKLOAD_LABEL) == labels.CACHE_ANNOTATOR
    }


def _name(r: Resource) -> str:
    return str((r.props.get("metadata") or {}).get("name") or r.name)


def _rule_problem(rule: dict[str, Any]) -> str | None:
    groups, kinds = rule.get("apiGroups") or [], rule.get("resources") or []
    verbs, allowed = set(rule.get("verbs") or []), set(labels.CACHE_ANNOTATOR_POD_VERBS)
    if list(groups) != [""] or list(kinds) != ["pods"] or rule.get("nonResourceURLs"):
        return f"grants {sorted(verbs)} on {list(groups)}/{list(kinds)}"
    if not verbs <= allowed:
        return f"grants {sorted(verbs - allowed)} on pods"
    return None


def annotator_least_privilege(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """The cache annotator's account is bound only by RoleBindings of its namespace, to Roles of the stack that grant
    at most get, list and patch on pods: no ClusterRoleBinding, no ClusterRole, no other resource or verb."""
    accounts = _annotator_accounts(resources)
    if not accounts:
        return []
    roles = {(namespace_of(r), _name(r)): r for r in resources if r.type == ROLE}
    out = []
    for binding in resources:
        if binding.type not in (ROLE_BINDING, CLUSTER_ROLE_BINDING):
            continue
        subjects = [s for s in binding.props.get("subjects") or [] if s.get("kind") == "ServiceAccount"]
        bound = {(str(s.get("namespace") or namespace_of(binding)), str(s.get("name"))) for s in subjects}
        held = sorted(name for _, name in bound & accounts)
        if not held:
            continue
        ref = binding.props.get("roleRef") or {}
        account = f"the cache annotator's account {held[0]}"
        if binding.type == CLUSTER_ROLE_BINDING:
            out.append(Violation(binding, f"binds {account} cluster-wide ({ref.get('name')}); it may hold {ALLOWED}"))
            continue
        if ref.get("kind") != "Role":
            bound_to = f"{ref.get('kind')} {ref.get('name')}"
            out.append(Violation(binding, f"binds {account} to {bound_to}; it may hold {ALLOWED}"))
            continue
        role = roles.get((namespace_of(binding), str(ref.get("name"))))
        if role is None:
            undeclared = f"Role {ref.get('name')}, which the stack does not declare"
            out.append(Violation(binding, f"binds {account} to {undeclared}"))
            continue
        for rule in role.props.get("rules") or []:
            problem = _rule_problem(rule)
            if problem is not None:
                out.append(Violation(role, f"{problem}, bound to {account}; it may hold {ALLOWED}"))
    return out
