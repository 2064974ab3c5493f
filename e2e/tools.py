"""Build the e2e tools from Go modules, once, into a cache outside the repo.

Every tool is built by module path and version with the ordinary ``go`` command, through a small
wrapper module where the module's own ``replace`` directives (or a generated, uncommitted file)
stop ``go install``. Nothing prebuilt is downloaded; nothing built lands in the repo.

The cache lives at ``${LLMD_E2E_CACHE:-${XDG_CACHE_HOME:-~/.cache}/llmd-e2e}``; each tool has its
own directory keyed by the tool's versions and the Go version (``<tool>-<key>/bin``), so bumping
one version rebuilds one tool. A tool is built only when its directory lacks a ``.complete``
stamp; a failed build leaves no stamp and one line naming the tool and the step.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from e2e.go_build import BuildError, cache_root, go_env, go_version, module_source, run_step, wrapper_module

__all__ = ["BuildError", "cache_root", "go_version", "module_source"]  # what lws.py, kwok.py and __main__ read here

# The versions, one place. The Pulumi CLI and the Kubernetes provider are the nearest versions the
# Go module proxy serves to the SDKs pinned in requirements.txt; `served_note` says so in the output.
PULUMI_SDK_VERSION = "3.272.0"
PULUMI_CLI_VERSION = "3.274.0"
KUBERNETES_SDK_VERSION = "4.34.2"
# pulumi-kubernetes tags its releases at the repository root, so the proxy knows the provider module
# only by pseudo-versions; this one is the commit tagged v4.25.0 (2026-01-14).
KUBERNETES_PROVIDER_MODULE_VERSION = "v4.0.0-20260115033456-f47bc2d6f199"
KUBERNETES_PROVIDER_VERSION = "4.25.0"
KUBERNETES_VERSION = "1.34.4"
ETCD_VERSION = "3.6.16"
KWOK_VERSION = "0.8.0"
# pkg/v3's go.mod replaces clipboard with this fork; a module that builds it (the CLI, the YAML host) must too.
CLIPBOARD_FORK = (
    "replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e\n"
)
# The YAML language host, for the component package's YAML example (examples/yaml-serving-stack).
PULUMI_YAML_VERSION = "1.25.0"
# The CRD fixture is v0.10.0, which the proxy does not serve; v0.9.0 is the newest it does.
LWS_VERSION = "0.9.0"

# Modules of the Kubernetes tree that k8s.io/kubernetes `replace`s with its own staging copies.
K8S_STAGING = (
    "api",
    "apiextensions-apiserver",
    "apimachinery",
    "apiserver",
    "cli-runtime",
    "client-go",
    "cloud-provider",
    "cluster-bootstrap",
    "code-generator",
    "component-base",
    "component-helpers",
    "controller-manager",
    "cri-api",
    "cri-client",
    "csi-translation-lib",
    "dynamic-resource-allocation",
    "endpointslice",
    "externaljwt",
    "kms",
    "kube-aggregator",
    "kube-controller-manager",
    "kube-proxy",
    "kube-scheduler",
    "kubectl",
    "kubelet",
    "metrics",
    "mount-utils",
    "pod-security-admission",
    "sample-apiserver",
    "sample-cli-plugin",
    "sample-controller",
)


@dataclass(frozen=True)
class Tool:
    """One cached tool: its name, the versions that key it, the binaries it yields and how to build them."""

    name: str
    versions: dict[str, str]
    binaries: tuple[str, ...]
    build: Callable[[Tool, Path, Path], None] = field(compare=False)
    note: str = ""

    def key(self, go: str) -> str:
        blob = json.dumps({"versions": self.versions, "go": go}, sort_keys=True)
        label = "-".join(self.versions.values())
        return f"{self.name}-{label}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


def _build_pulumi(tool: Tool, out: Path, root: Path) -> None:
    work, env, log = root / "work" / tool.name, go_env(root), out.parent / "build.log"
    pkg = "github.com/pulumi/pulumi/pkg/v3"
    wrapper_module(
        work,
        "llmd-e2e/pulumi",
        f"require (\n\t{pkg} v{PULUMI_CLI_VERSION}\n\tgithub.com/pulumi/pulumi/sdk/v3 v{PULUMI_CLI_VERSION}\n)\n\n"
        # pkg/v3's own go.mod replaces the sdk with ../sdk and clipboard with a fork.
        + CLIPBOARD_FORK,
    )
    run_step(tool.name, "go get", ["go", "get", f"{pkg}/cmd/pulumi@v{PULUMI_CLI_VERSION}"], work, env, log)
    flags = f"-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v{PULUMI_CLI_VERSION}"
    run_step(
        tool.name,
        "go build",
        ["go", "build", "-ldflags", flags, "-o", str(out / "pulumi"), f"{pkg}/cmd/pulumi"],
        work,
        env,
        log,
    )
    # The Python language host's exec script and the policy shim ship in the SDK module's source.
    sdk = module_source(tool.name, "github.com/pulumi/pulumi/sdk/v3", f"v{PULUMI_SDK_VERSION}", root) / "python"
    exec_script = out / "pulumi-language-python-exec"
    shutil.copyfile(sdk / "cmd" / "pulumi-language-python-exec", exec_script)
    exec_script.chmod(0o755)


def _build_pulumi_yaml(tool: Tool, out: Path, root: Path) -> None:
    work, env, log = root / "work" / tool.name, go_env(root), out.parent / "build.log"
    module = "github.com/pulumi/pulumi-yaml"
    wrapper_module(
        work,
        "llmd-e2e/pulumi-yaml",
        f"require {module} v{PULUMI_YAML_VERSION}\n\n" + CLIPBOARD_FORK,  # pulumi-yaml depends on pkg/v3
    )
    cmd = f"{module}/cmd/pulumi-language-yaml"
    run_step(tool.name, "go get", ["go", "get", f"{cmd}@v{PULUMI_YAML_VERSION}"], work, env, log)
    flags = f"-s -w -X {module}/pkg/version.Version=v{PULUMI_YAML_VERSION}"
    run_step(
        tool.name,
        "go build",
        ["go", "build", "-ldflags", flags, "-o", str(out / "pulumi-language-yaml"), cmd],
        work,
        env,
        log,
    )


def _build_kubernetes_provider(tool: Tool, out: Path, root: Path) -> None:
    work, env, log = root / "work" / tool.name, go_env(root), out.parent / "build.log"
    module = "github.com/pulumi/pulumi-kubernetes/provider/v4"
    # The provider's main package embeds schema-embed.json, which its Makefile generates from the
    # committed schema.json (so the module zip lacks it): the wrapper is that main package, with
    # the embed generated here the way the upstream generator does (the version set, compacted).
    main = (
        'package main\n\nimport (\n\t_ "embed"\n\n'
        f'\t"{module}/pkg/provider"\n\t"{module}/pkg/version"\n)\n\n'
        "//go:embed schema-embed.json\nvar pulumiSchema []byte\n\n"
        "//go:embed terraform-mapping-embed.json\nvar terraformMapping []byte\n\n"
        'func main() { provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping) }\n'
    )
    wrapper_module(
        work,
        "llmd-e2e/pulumi-resource-kubernetes",
        f"require {module} {KUBERNETES_PROVIDER_MODULE_VERSION}\n\n"
        # The provider's go.mod points its own SDK module at ../sdk; the provider's Go code does not
        # import it, but the module graph needs a version that exists.
        "replace github.com/pulumi/pulumi-kubernetes/sdk/v4 => github.com/pulumi/pulumi-kubernetes/sdk/v4 v4.22.2\n",
        {"main.go": main},
    )
    run_step(
        tool.name,
        "go get",
        ["go", "get", f"{module}/pkg/provider@{KUBERNETES_PROVIDER_MODULE_VERSION}"],
        work,
        env,
        log,
    )
    src = module_source(tool.name, module, KUBERNETES_PROVIDER_MODULE_VERSION, root)
    schema = json.loads((src / "cmd" / "pulumi-resource-kubernetes" / "schema.json").read_text())
    schema["version"] = KUBERNETES_PROVIDER_VERSION
    (work / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    mapping = json.loads((src / "cmd" / "pulumi-resource-kubernetes" / "terraform-mapping.json").read_text())
    (work / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))
    run_step(tool.name, "go mod tidy", ["go", "mod", "tidy"], work, env, log)
    flags = f"-s -w -X {module}/pkg/version.Version={KUBERNETES_PROVIDER_VERSION}"
    run_step(
        tool.name,
        "go build",
        ["go", "build", "-ldflags", flags, "-o", str(out / "pulumi-resource-kubernetes"), "."],
        work,
        env,
        log,
    )


def _build_etcd(tool: Tool, out: Path, root: Path) -> None:
    work, env, log = root / "work" / tool.name, go_env(root), out.parent / "build.log"
    # The etcd binary's main package sits in the root module, which replaces every etcd module
    # with its local copy; etcdmain.Main is all that main does.
    main = (
        'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
        "func main() { etcdmain.Main(os.Args) }\n"
    )
    wrapper_module(work, "llmd-e2e/etcd", f"require go.etcd.io/etcd/server/v3 v{ETCD_VERSION}\n", {"main.go": main})
    run_step(tool.name, "go get", ["go", "get", f"go.etcd.io/etcd/server/v3/etcdmain@v{ETCD_VERSION}"], work, env, log)
    run_step(tool.name, "go mod tidy", ["go", "mod", "tidy"], work, env, log)
    run_step(tool.name, "go build", ["go", "build", "-ldflags", "-s -w", "-o", str(out / "etcd"), "."], work, env, log)


def _build_kubernetes(tool: Tool, out: Path, root: Path) -> None:
    work, env, log = root / "work" / tool.name, go_env(root), out.parent / "build.log"
    v = KUBERNETES_VERSION
    minor = v.split(".")[1]
    replaces = "".join(f"\tk8s.io/{name} => k8s.io/{name} v0.{v.split('.', 1)[1]}\n" for name in K8S_STAGING)
    wrapper_module(work, "llmd-e2e/kubernetes", f"require k8s.io/kubernetes v{v}\n\nreplace (\n{replaces})\n")
    cmds = [f"k8s.io/kubernetes/cmd/{name}" for name in tool.binaries]
    run_step(tool.name, "go get", ["go", "get", *(f"{cmd}@v{v}" for cmd in cmds)], work, env, log)
    flags = " ".join(
        ["-s -w"]
        + [
            f"-X {pkg}.gitVersion=v{v} -X {pkg}.gitMajor=1 -X {pkg}.gitMinor={minor}"
            for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        ]
    )
    run_step(tool.name, "go build", ["go", "build", "-ldflags", flags, "-o", str(out) + "/", *cmds], work, env, log)


def _build_kwok(tool: Tool, out: Path, root: Path) -> None:
    env, log = go_env(root), out.parent / "build.log"
    env["GOBIN"] = str(out)
    consts = "sigs.k8s.io/kwok/pkg/consts"
    flags = f"-s -w -X {consts}.Version={KWOK_VERSION} -X {consts}.KubeVersion={KUBERNETES_VERSION}"
    pkgs = [f"sigs.k8s.io/kwok/cmd/{name}@v{KWOK_VERSION}" for name in tool.binaries]
    run_step(tool.name, "go install", ["go", "install", "-ldflags", flags, *pkgs], out.parent, env, log)


def _build_lws(tool: Tool, out: Path, root: Path) -> None:
    work, env, log = root / "work" / tool.name, go_env(root), out.parent / "build.log"
    # `go install module@version` asks the proxy for the module's version list, which it refuses for lws.
    wrapper_module(work, "llmd-e2e/lws", f"require sigs.k8s.io/lws v{LWS_VERSION}\n")
    run_step(tool.name, "go get", ["go", "get", f"sigs.k8s.io/lws/cmd@v{LWS_VERSION}"], work, env, log)
    run_step(
        tool.name,
        "go build",
        ["go", "build", "-ldflags", "-s -w", "-o", str(out / "lws-controller"), "sigs.k8s.io/lws/cmd"],
        work,
        env,
        log,
    )


TOOLS: tuple[Tool, ...] = (
    Tool(
        "pulumi",
        {"cli": PULUMI_CLI_VERSION, "sdk": PULUMI_SDK_VERSION},
        ("pulumi", "pulumi-language-python-exec"),
        _build_pulumi,
        note=f"pkg/v3 v{PULUMI_SDK_VERSION} is not served by the Go module proxy;"
        f" built v{PULUMI_CLI_VERSION}, the nearest served",
    ),
    Tool(
        "kubernetes-provider",
        {"provider": KUBERNETES_PROVIDER_VERSION},
        ("pulumi-resource-kubernetes",),
        _build_kubernetes_provider,
        note=f"the SDK pins {KUBERNETES_SDK_VERSION}; the proxy serves the provider module only at the commit"
        f" of v{KUBERNETES_PROVIDER_VERSION}, used from PATH",
    ),
    Tool("pulumi-yaml", {"yaml": PULUMI_YAML_VERSION}, ("pulumi-language-yaml",), _build_pulumi_yaml),
    Tool("etcd", {"etcd": ETCD_VERSION}, ("etcd",), _build_etcd),
    Tool(
        "kubernetes",
        {"kubernetes": KUBERNETES_VERSION},
        ("kube-apiserver", "kube-controller-manager", "kube-scheduler"),
        _build_kubernetes,
    ),
    Tool("kwok", {"kwok": KWOK_VERSION, "kubernetes": KUBERNETES_VERSION}, ("kwok", "kwokctl"), _build_kwok),
)
EXTRA_TOOLS: tuple[Tool, ...] = (Tool("lws", {"lws": LWS_VERSION}, ("lws-controller",), _build_lws),)


def tool_dir(tool: Tool, go: str) -> Path:
    return cache_root() / tool.key(go)


def _stamped(tool: Tool, go: str) -> bool:
    home = tool_dir(tool, go)
    return (home / ".complete").exists() and all((home / "bin" / b).exists() for b in tool.binaries)


def ensure(tool: Tool, go: str, say: Callable[[str], None]) -> Path:
    """The tool's bin directory, built first when its stamp is missing."""
    home = tool_dir(tool, go)
    bin_dir = home / "bin"
    if _stamped(tool, go):
        say(f"{tool.name}: cached ({home})")
        return bin_dir
    if home.exists():
        shutil.rmtree(home)
    bin_dir.mkdir(parents=True)
    started = time.monotonic()
    say(
        f"{tool.name}: building {', '.join(tool.binaries)} ({', '.join(f'{k} {v}' for k, v in tool.versions.items())})"
        + (f"; {tool.note}" if tool.note else "")
    )
    tool.build(tool, bin_dir, cache_root())
    missing = [b for b in tool.binaries if not (bin_dir / b).exists()]
    if missing:
        raise BuildError(f"{tool.name}: install failed: {', '.join(missing)} not produced (log: {home / 'build.log'})")
    (home / ".complete").write_text(json.dumps(tool.versions) + "\n")
    say(f"{tool.name}: built in {time.monotonic() - started:.0f} s")
    return bin_dir


def ensure_all(extra: bool = False, say: Callable[[str], None] | None = None, tidy: bool = True) -> dict[str, Path]:
    """Every tool's bin directory, building the missing ones side by side."""
    lock = threading.Lock()

    def default_say(line: str) -> None:
        with lock:
            print(f"[e2e tools] {line}", file=sys.stderr, flush=True)

    emit = say or default_say
    go = go_version()
    tools = TOOLS + (EXTRA_TOOLS if extra else ())
    started = time.monotonic()
    missing = {tool.name for tool in tools if not _stamped(tool, go)}
    with ThreadPoolExecutor(max_workers=len(tools)) as pool:
        futures = {tool.name: pool.submit(ensure, tool, go, emit) for tool in tools}
        dirs = {name: future.result() for name, future in futures.items()}
    if tidy and missing:
        # The compiled objects are worth nothing once every binary is stamped; the module sources stay.
        # Only a call that built something tidies, and only its own work: a run that found every tool
        # cached must not pull the build cache from under another process's build (seen: lws failing
        # with `chdir .../work/lws` while a preset started beside it).
        shutil.rmtree(cache_root() / "go" / "build", ignore_errors=True)
        for name in missing:
            shutil.rmtree(cache_root() / "work" / name, ignore_errors=True)
    emit(f"all tools ready in {time.monotonic() - started:.0f} s (cache {cache_root()})")
    return dirs


if __name__ == "__main__":
    try:
        ensure_all(extra="--all" in sys.argv[1:])
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
