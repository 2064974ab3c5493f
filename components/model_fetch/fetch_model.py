"""Fetch a Hugging Face model's files into the model cache once, for every model server to load.

Idempotent and resumable: a file already present with its published size is skipped; a partial
download (`<file>.part`) continues where it stopped (an HTTP Range request); a finished file is
renamed into place, so a reader never sees half a file. A second run with the files present
downloads nothing. It also prepares the cache's directories (created and opened to the model
servers' users before the kubelet would create them root-only).

Runs in the model-cache Job with only the Python standard library. Configuration comes from the
environment (see `Settings.from_env`). Exit status 0: every file present; 1: a fetch failed (the
reason on stderr; the Job retries, and the retry resumes).
"""

from __future__ import annotations

import http.client
import json
import os
import posixpath
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

CHUNK = 8 * 1024 * 1024
MARKER = ".fetched.json"  # what the last complete run fetched: model, resolved revision, files


class FetchError(Exception):
    pass


@dataclass(frozen=True)
class Settings:
    endpoint: str  # the Hub (HF_ENDPOINT)
    model: str  # repository id, e.g. Qwen/Qwen3-32B
    revision: str  # branch, tag or commit
    root: Path  # the cache volume's root, as mounted in the Job
    target: Path  # the model's directory in the cache, under root
    token: str  # empty: anonymous
    workers: int  # files fetched in parallel
    attempts: int  # per file, each resuming the last
    writable_dirs: tuple[Path, ...]  # created and opened (0777) for the model servers' caches

    @staticmethod
    def from_env(env: dict[str, str]) -> Settings:
        return Settings(
            endpoint=env.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/"),
            model=env["MODEL"],
            revision=env.get("REVISION", "main"),
            root=Path(env["CACHE_ROOT"]),
            target=Path(env["TARGET"]),
            token=env.get("HF_TOKEN", ""),
            workers=int(env.get("WORKERS", "8")),
            attempts=int(env.get("ATTEMPTS", "5")),
            writable_dirs=tuple(Path(p) for p in env.get("WRITABLE_DIRS", "").split(":") if p),
        )


@dataclass(frozen=True)
class RemoteFile:
    path: str  # relative to the repository root
    size: int


def _request(settings: Settings, url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    all_headers = {"User-Agent": "llm-d-model-cache/1", **(headers or {})}
    if settings.token:
        all_headers["Authorization"] = f"Bearer {settings.token}"
    return urllib.request.Request(url, headers=all_headers)


def _safe(path: str) -> str:
    """A repository path, never one that leaves the model's directory."""
    normal = posixpath.normpath(path)
    if not path or normal.startswith(("/", "..")) or "\\" in path or normal == ".":
        raise FetchError(f"refusing the repository path {path!r}")
    return normal


def list_files(settings: Settings) -> tuple[str, list[RemoteFile]]:
    """The revision's commit and its files with their sizes (the Hub API, `blobs=true`)."""
    repo = urllib.parse.quote(settings.model, safe="/")
    url = f"{settings.endpoint}/api/models/{repo}/revision/{urllib.parse.quote(settings.revision, safe='')}?blobs=true"
    try:
        with urllib.request.urlopen(_request(settings, url), timeout=60) as response:
            info = json.load(response)
    except urllib.error.HTTPError as error:
        hint = " (a gated model: is the HF token set and accepted?)" if error.code in (401, 403) else ""
        raise FetchError(f"{settings.model}@{settings.revision}: the Hub answered HTTP {error.code}{hint}") from None
    except (urllib.error.URLError, OSError) as error:
        raise FetchError(f"{settings.model}@{settings.revision}: the Hub is unreachable: {error}") from None
    files = [RemoteFile(_safe(s["rfilename"]), int(s.get("size") or 0)) for s in info.get("siblings") or []]
    return str(info.get("sha") or settings.revision), sorted(files, key=lambda f: f.path)


def _download(settings: Settings, commit: str, remote: RemoteFile, log: Callable[[str], None]) -> int:
    """Bytes downloaded for one file (0 when it is already present)."""
    dest = settings.target / remote.path
    if dest.is_file() and dest.stat().st_size == remote.size:
        return 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    repo = urllib.parse.quote(settings.model, safe="/")
    url = f"{settings.endpoint}/{repo}/resolve/{commit}/{urllib.parse.quote(remote.path)}"
    fetched = 0
    for attempt in range(1, settings.attempts + 1):
        offset = part.stat().st_size if part.is_file() else 0
        if offset > remote.size:  # not a prefix of this file: start over
            part.unlink()
            offset = 0
        try:
            if offset < remote.size or remote.size == 0:
                fetched += _stream(settings, url, part, offset)
            break
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            if attempt == settings.attempts:
                raise FetchError(f"{remote.path}: {error} (after {attempt} attempts; the next run resumes)") from None
            log(f"{remote.path}: {error}; resuming (attempt {attempt + 1})")
            time.sleep(min(2**attempt, 30))
    size = part.stat().st_size if part.is_file() else 0
    if size != remote.size:
        raise FetchError(f"{remote.path}: got {size} bytes, the Hub lists {remote.size}")
    os.replace(part, dest)
    log(f"{remote.path}: {remote.size} bytes")
    return fetched


def _stream(settings: Settings, url: str, part: Path, offset: int) -> int:
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    try:
        response = urllib.request.urlopen(_request(settings, url, headers), timeout=120)
    except urllib.error.HTTPError as error:
        if error.code == 416:  # nothing left past the offset
            return 0
        raise
    with response:
        mode = "ab" if offset and response.status == 206 else "wb"  # 200: the server ignored the range
        expected = int(response.headers.get("Content-Length") or -1)
        written = 0
        with open(part, mode) as out:
            while chunk := response.read(CHUNK):
                out.write(chunk)
                written += len(chunk)
    if 0 <= written < expected:  # http.client reads a dropped connection as a short body
        raise ConnectionError(f"the connection closed after {written} of {expected} bytes")
    return written


def prepare(settings: Settings) -> None:
    """The model's directory (readable by all) and the caches the model servers write (writable by all)."""
    if settings.root not in settings.target.parents:
        raise FetchError(f"TARGET={settings.target} is not under CACHE_ROOT={settings.root}")
    settings.target.mkdir(parents=True, exist_ok=True)
    relative = settings.target.relative_to(settings.root)
    for directory in (relative, *relative.parents[:-1]):  # not the volume's root itself
        (settings.root / directory).chmod(0o755)
    for directory in settings.writable_dirs:
        if settings.root not in directory.parents:
            raise FetchError(f"WRITABLE_DIRS: {directory} is not under CACHE_ROOT={settings.root}")
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o777)


def run(settings: Settings, log: Callable[[str], None] = print) -> int:
    """Fetch what is missing; returns the bytes downloaded."""
    prepare(settings)
    commit, files = list_files(settings)
    log(f"{settings.model}@{settings.revision} ({commit}): {len(files)} files, {sum(f.size for f in files)} bytes")
    with ThreadPoolExecutor(max_workers=max(1, settings.workers)) as pool:
        fetched = sum(pool.map(lambda f: _download(settings, commit, f, log), files))
    marker = {"model": settings.model, "revision": commit, "files": {f.path: f.size for f in files}}
    (settings.target / MARKER).write_text(json.dumps(marker, indent=1, sort_keys=True) + "\n")
    log(f"downloaded {fetched} bytes; {len(files)} files present in {settings.target}")
    return fetched


def main() -> int:
    try:
        run(Settings.from_env(dict(os.environ)))
    except FetchError as failure:
        print(f"model fetch failed: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
