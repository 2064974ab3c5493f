"""The tier evictor's walk of the tree (stdlib only, shipped beside `evict_tier.py` in its ConfigMap): one scan
that counts the files and keeps, in bounded memory, the first ones to delete; and the deletion of one of them,
only while it is still the regular file of the tree the scan judged.

Deletion order: files outside the live namespaces first (a namespace is a top-level directory of the tier,
components/specs/tier_namespace.py; with none named, none is preferred), then the least recently used.
"""

from __future__ import annotations

import errno
import heapq
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field


def stamp(st: os.stat_result, timestamp: str) -> float:
    """When the file was last used, as far as the backend says: the later of its access and its last write
    (`atime`), or its last write (`mtime`)."""
    return max(st.st_atime, st.st_mtime) if timestamp == "atime" else st.st_mtime


@dataclass(frozen=True)
class Candidate:
    used: float  # the timestamp it is ordered by
    path: tuple[str, ...]  # path components under the tier's directory
    bytes: int
    mtime_ns: int  # as scanned: a changed file is no longer the one the scan judged
    stale: bool = False  # outside every live namespace


STALE_HEAD_START = float(2**40)  # ranks a stale file before every live one: more seconds than any timestamp holds
NONE: frozenset[str] = frozenset()


@dataclass
class Scan:
    files: int = 0
    bytes: int = 0  # bytes of every regular file met
    young: int = 0  # younger than the minimum age: never candidates
    vanished: int = 0
    denied: int = 0
    skipped_other: int = 0  # symlinks, devices, sockets, other file systems
    stale_files: int = 0  # outside every live namespace
    stale_bytes: int = 0
    seconds: float = 0.0
    heap: list[tuple[float, int, Candidate]] = field(default_factory=list)  # max-heap on -(deletion rank)

    def oldest_first(self) -> list[Candidate]:
        return [c for _, _, c in sorted(self.heap, key=lambda item: -item[0])]


def _walk(root: str, root_dev: int, out: Scan) -> Iterator[tuple[tuple[str, ...], os.stat_result]]:
    """Every entry under `root` but its directories, with its own stat (a symlink's, never its target's): depth
    first, one open directory at a time; no symlink is followed, no other file system entered. An entry that
    vanishes or cannot be read is counted once, here."""
    stack: list[tuple[str, ...]] = [()]
    while stack:
        parts = stack.pop()
        path = os.path.join(root, *parts)
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        out.vanished += 1
                        continue
                    except PermissionError:
                        out.denied += 1
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        if st.st_dev == root_dev:
                            stack.append((*parts, entry.name))
                        else:
                            out.skipped_other += 1  # another file system mounted inside: not ours
                        continue
                    yield (*parts, entry.name), st
        except FileNotFoundError:
            out.vanished += 1
        except (PermissionError, NotADirectoryError):
            out.denied += 1


def scan(root: str, now: float, min_age: float, limit: int, timestamp: str, live: frozenset[str] = NONE) -> Scan:
    """Stream the tree once: count its files and bytes, keep the `limit` files older than `min_age` to delete
    first: outside the `live` namespaces (with any named; a top-level file is in none), then the oldest."""
    out, started, order = Scan(), time.monotonic(), 0
    root_dev = os.stat(root).st_dev
    for parts, st in _walk(root, root_dev, out):
        if not stat.S_ISREG(st.st_mode):
            out.skipped_other += 1
            continue
        size = st.st_size  # what the connector wrote (a block file is written whole)
        out.files += 1
        out.bytes += size
        stale = bool(live) and (len(parts) == 1 or parts[0] not in live)
        out.stale_files, out.stale_bytes = out.stale_files + stale, out.stale_bytes + size * stale
        used = stamp(st, timestamp)
        if now - used < min_age:
            out.young += 1
            continue
        order += 1  # ties broken by scan order, never by comparing candidates
        item = (STALE_HEAD_START * stale - used, order, Candidate(used, parts, size, st.st_mtime_ns, stale))
        if len(out.heap) < limit:
            heapq.heappush(out.heap, item)
        elif item[0] > out.heap[0][0]:  # goes before the last candidate kept
            heapq.heapreplace(out.heap, item)
    out.seconds = time.monotonic() - started
    return out


class OutsideError(Exception):
    """A path component is no longer a directory of the tree (a symlink or a file took its place)."""


def delete_inside(root_fd: int, candidate: Candidate, now: float, min_age: float, timestamp: str) -> int:
    """Unlink the candidate if still the regular file the scan judged, old enough, reached through directories of
    the tree; the bytes freed (0: spared). Raises FileNotFoundError, PermissionError, OutsideError."""
    fds: list[int] = []
    try:
        fd = root_fd
        for part in candidate.path[:-1]:
            try:
                fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OutsideError(os.path.join(*candidate.path)) from e
                raise
            fds.append(fd)
        name = candidate.path[-1]
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise OutsideError(os.path.join(*candidate.path))
        if st.st_mtime_ns != candidate.mtime_ns or now - stamp(st, timestamp) < min_age:
            return 0  # written or read since the scan: no longer the oldest
        os.unlink(name, dir_fd=fd)
        return candidate.bytes
    finally:
        for opened in reversed(fds):
            os.close(opened)
