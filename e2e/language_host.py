"""A Python language host for the Pulumi engine: runs the program and the policy pack.

The Go module of Pulumi's own Python language host
(`github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3`) is served by the Go module
proxy at no version, so it cannot be built here. This host speaks the same `LanguageRuntime` gRPC
protocol with the stubs the Pulumi Python SDK ships, and runs programs through the SDK's own exec
script (`pulumi-language-python-exec`, from the `sdk/v3` Go module at the SDK's version), exactly
as the Go host does: config in `PULUMI_CONFIG`, settings as flags, exit code 32 for "an error was
already shown". Policy packs run through `RunPlugin`, their output streamed back to the engine.

It implements what `pulumi preview`, `up`, `destroy` and `--policy-pack` call; the rest answers
UNIMPLEMENTED, which the engine treats as an older host (required packages: the engine then loads
each provider when the program first registers one of its resources).

Started by the engine as `pulumi-language-python [flags] ENGINE_ADDRESS`; prints its port.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

EXEC_SCRIPT = Path(os.environ.get("LLMD_E2E_PYTHON_EXEC", Path(__file__).with_name("pulumi-language-python-exec")))
BAIL_EXIT_CODE = 32  # the exec script's "an error was already shown to the user"


def _options(info: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(info.options) if info.HasField("options") else {}


def _python(root: str, options: dict[str, Any]) -> str:
    """The interpreter of the project's `virtualenv` option (relative to the project root), else this one."""
    venv = options.get("virtualenv")
    if venv:
        candidate = Path(root, venv, "bin", "python")
        if candidate.exists():
            return str(candidate)
    return sys.executable


class _Children:
    """The programs and plugins this host started: stopped with it (the engine interrupts the host only)."""

    def __init__(self) -> None:
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)

    @contextlib.contextmanager
    def track(self, proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
        self.add(proc)
        try:
            yield proc
        finally:
            with self._lock:
                self._procs.discard(proc)

    def stop(self) -> None:
        with self._lock:
            for proc in self._procs:
                if proc.poll() is None:
                    proc.terminate()


_children = _Children()


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine: str) -> None:
        self.engine = engine

    def Handshake(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC method names)
        if request.engine_address:
            self.engine = request.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: Any, context: Any) -> Any:  # noqa: N802
        import pulumi

        version = getattr(pulumi, "__version__", "") or ""
        return plugin_pb2.PluginInfo(version=version)

    def Run(self, request: Any, context: Any) -> Any:  # noqa: N802
        info = request.info
        root = info.root_directory or request.pwd
        program_dir = info.program_directory or request.pwd
        entry = info.entry_point or "."
        env = dict(os.environ)
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        argv = [
            _python(root, _options(info)),
            "-u",
            str(EXEC_SCRIPT),
            "--monitor",
            request.monitor_address,
            "--engine",
            self.engine,
            "--project",
            request.project,
            "--stack",
            request.stack,
            "--pwd",
            request.pwd or program_dir,
            "--dry_run",
            "true" if request.dryRun else "false",
            "--parallel",
            str(request.parallel or 1),
            "--organization",
            request.organization,
            "--root_directory",
            root,
            str(Path(program_dir, entry)),
            *request.args,
        ]
        with _children.track(
            subprocess.Popen(argv, cwd=request.pwd or program_dir, env=env, start_new_session=True)
        ) as proc:
            code = proc.wait()
        if code == 0:
            return language_pb2.RunResponse()
        if code == BAIL_EXIT_CODE:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"Program exited with non-zero exit code: {code}")

    def RunPlugin(self, request: Any, context: Any) -> Iterator[Any]:  # noqa: N802
        info = request.info
        plugin_dir = info.program_directory or info.root_directory
        env = dict(kv.split("=", 1) for kv in request.env if "=" in kv) if request.env else dict(os.environ)
        argv = [_python(info.root_directory or plugin_dir, _options(info)), "-u", plugin_dir, *request.args]
        proc = subprocess.Popen(
            argv, cwd=request.pwd or plugin_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        chunks: list[Any] = []
        lock = threading.Condition()
        done = [0]

        def pump(stream: Any, field: str) -> None:
            for chunk in iter(lambda: stream.read1(65536), b""):
                with lock:
                    chunks.append(language_pb2.RunPluginResponse(**{field: chunk}))
                    lock.notify()
            with lock:
                done[0] += 1
                lock.notify()

        pumps = [
            threading.Thread(target=pump, args=(proc.stdout, "stdout"), daemon=True),
            threading.Thread(target=pump, args=(proc.stderr, "stderr"), daemon=True),
        ]
        for thread in pumps:
            thread.start()
        while True:
            with lock:
                while not chunks and done[0] < 2 and context.is_active():
                    lock.wait(0.5)
                pending, chunks[:] = list(chunks), []
                finished = done[0] == 2
            yield from pending
            if not context.is_active():
                proc.kill()
                return
            if finished:
                break
        yield language_pb2.RunPluginResponse(exitcode=proc.wait())


def main(argv: list[str]) -> int:
    positional = [arg for arg in argv if not arg.startswith("-")]
    host = LanguageHost(positional[-1] if positional else "")
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[
            ("grpc.max_receive_message_length", 400 * 1024 * 1024),
            ("grpc.max_send_message_length", 400 * 1024 * 1024),
        ],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)

    def stop(signum: int, frame: Any) -> None:
        _children.stop()
        server.stop(0)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
