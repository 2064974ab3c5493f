"""Keep the shared filesystem tier below its high watermark (the connectors never delete from it): one pass reads
the usage and, above the high watermark, scans the tier's directory once and deletes the oldest files down to
the low watermark. Stdlib only, run by the tier evictor's Deployment; configured by the environment.

What it promises, and how:
- Bounded memory on millions of files: a scan streams the tree (`os.scandir`) and keeps only the
  `MAX_CANDIDATES` first files to delete (a bounded max-heap); a pass needing more, the next one continues.
- Namespaces no stack writes any more first: each top-level directory is one (components/specs/tier_namespace.py);
  files outside `LIVE_NAMESPACES` (a former configuration's, or the layout before namespaces) go before any live
  file, oldest first among them; an empty list prefers none.
- Oldest first by `TIMESTAMP`: `atime`, the later of the last access and write (Lustre); `mtime`, the last
  write (EFS does not update atime on reads). components/specs/tier_evictor.py says why.
- Never a file younger than a pass (`MIN_AGE_SECONDS`, at least the last pass's duration) nor one being
  written: each file is checked again just before its deletion (every write moves its mtime).
- Never outside its directory: the walk follows no symlink nor leaves the file system; a deletion reopens
  each parent from the root with O_NOFOLLOW, so a directory swapped for a symlink since the scan is refused.
- Vanishing files, unreadable directories and undeletable files are counted and skipped; a full disk needs
  no space to delete from.
It runs until stopped (SIGTERM ends the loop after the current file).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from components.exporters.prometheus_text import Exposition, serve_metrics
from components.tier_evictor.tier_scan import OutsideError, Scan, delete_inside, scan

Usage = Callable[[], tuple[int, int]]  # (used bytes, total bytes)


@dataclass(frozen=True)
class Settings:
    tier_dir: str
    high: float  # fractions of the total
    low: float
    min_age_seconds: float
    poll_seconds: float
    max_candidates: int
    timestamp: str  # atime | mtime
    usage: str  # statvfs | scan (the claim's size is the budget: EFS is elastic)
    capacity_bytes: int  # scan: the budget
    metrics_port: int
    live_namespaces: frozenset[str] = frozenset()  # top-level directories the servers write now (evicted last)

    @staticmethod
    def from_env(env: dict[str, str]) -> Settings:
        get = env.get
        settings = Settings(
            env["TIER_DIR"],
            float(env["HIGH_WATERMARK_PERCENT"]) / 100,
            float(env["LOW_WATERMARK_PERCENT"]) / 100,
            float(get("MIN_AGE_SECONDS", "300")),
            float(get("POLL_SECONDS", "10")),
            int(get("MAX_CANDIDATES", "1000000")),
            get("TIMESTAMP", "atime"),
            get("USAGE", "statvfs"),
            int(get("CAPACITY_BYTES", "0")),
            int(get("METRICS_PORT", "9400")),
            frozenset(n for n in get("LIVE_NAMESPACES", "").split(",") if n),
        )
        if problem := settings.problem():
            raise ValueError(problem)
        return settings

    def problem(self) -> str | None:
        if not 0 < self.low < self.high <= 1:
            return f"watermarks must satisfy 0 < low < high <= 100%, got low {self.low:.1%} high {self.high:.1%}"
        if self.timestamp not in ("atime", "mtime"):
            return f"TIMESTAMP must be atime or mtime, got {self.timestamp}"
        if self.usage not in ("statvfs", "scan"):
            return f"USAGE must be statvfs or scan, got {self.usage}"
        if self.usage == "scan" and self.capacity_bytes <= 0:
            return "USAGE scan needs CAPACITY_BYTES (the budget the tier's directory may hold)"
        if any("/" in n or n in (".", "..") for n in self.live_namespaces):
            return f"LIVE_NAMESPACES must name directories under TIER_DIR, got {sorted(self.live_namespaces)}"
        bad = self.max_candidates < 1 or self.poll_seconds <= 0 or self.min_age_seconds < 0
        return "MAX_CANDIDATES, POLL_SECONDS must be positive, MIN_AGE_SECONDS not negative" if bad else None


def statvfs_usage(path: str) -> Usage:
    """What `df` shows for the file system holding `path`: used over used plus what is available."""

    def usage() -> tuple[int, int]:
        s = os.statvfs(path)
        used = (s.f_blocks - s.f_bfree) * s.f_frsize
        return used, used + s.f_bavail * s.f_frsize

    return usage


@dataclass
class PassResult:
    number: int
    used_before: int
    total: int
    used_after: int
    scanned: Scan | None = None
    deleted_files: int = 0
    deleted_bytes: int = 0
    deleted_stale: int = 0  # of the files deleted, those outside every live namespace
    changed: int = 0  # candidates written or read since the scan
    refused: int = 0  # candidates no longer reached through directories of the tree
    oldest_deleted: float | None = None
    newest_deleted: float | None = None
    seconds: float = 0.0
    min_age: float = 0.0  # files younger than this were spared

    def line(self, settings: Settings) -> str:
        def pct(used: int) -> str:
            return f"{used / self.total:.1%}" if self.total else "n/a"

        head = f"pass {self.number}: usage {pct(self.used_before)} (high {settings.high:.0%}, low {settings.low:.0%})"
        s = self.scanned
        if s is None:
            return f"{head}: below the high watermark, nothing to do"
        ages = ""
        if self.oldest_deleted is not None and self.newest_deleted is not None:
            now = time.time()
            ages = f", their last use {now - self.oldest_deleted:.0f} to {now - self.newest_deleted:.0f} s ago"
        outside = (
            f", {self.deleted_stale} of the {s.stale_files} outside the live namespaces first"
            if settings.live_namespaces
            else ""
        )
        return (
            f"{head}: scanned {s.files} files ({s.bytes / 2**30:.1f} GiB) in {s.seconds:.1f} s, deleted"
            f" {self.deleted_files} files ({self.deleted_bytes / 2**30:.1f} GiB){outside}, oldest first{ages};"
            f" usage now"
            f" {pct(self.used_after)}; skipped {s.young} younger than {self.min_age:.0f} s,"
            f" {self.changed} used since the scan, {s.vanished} vanished, {s.denied} denied,"
            f" {self.refused + s.skipped_other} not regular files of the tree; {self.seconds:.1f} s"
        )


class Evictor:
    def __init__(self, settings: Settings, usage: Usage | None = None, clock: Callable[[], float] = time.time):
        self.settings, self.clock, self.passes = settings, clock, 0
        self.min_age = settings.min_age_seconds
        # scan: the usage is what each pass's scan counts in the directory, against the budget.
        self.counts_by_scan = usage is None and settings.usage == "scan"
        self._usage, self.metrics = usage or statvfs_usage(settings.tier_dir), Metrics()
        self.stopping = threading.Event()

    def _scan(self) -> Scan:
        s = self.settings
        return scan(s.tier_dir, self.clock(), self.min_age, s.max_candidates, s.timestamp, s.live_namespaces)

    def one_pass(self) -> PassResult:
        settings, started = self.settings, time.monotonic()
        self.passes += 1
        found = self._scan() if self.counts_by_scan else None
        used, total = (found.bytes, settings.capacity_bytes) if found is not None else self._usage()
        result = PassResult(self.passes, used, total, used, min_age=self.min_age)
        self.metrics.usage(used, total, settings)
        if total <= 0 or used < settings.high * total:
            self.metrics.record(result, settings)
            return result
        found = found or self._scan()
        result.scanned = found
        target = used - int(settings.low * total)
        root_fd = os.open(settings.tier_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for candidate in found.oldest_first():
                if result.deleted_bytes >= target or self.stopping.is_set():
                    break
                try:
                    freed = delete_inside(root_fd, candidate, self.clock(), self.min_age, settings.timestamp)
                except FileNotFoundError:
                    found.vanished += 1
                    continue
                except PermissionError:
                    found.denied += 1
                    continue
                except OutsideError:
                    result.refused += 1
                    continue
                if not freed:
                    result.changed += 1
                    continue
                result.deleted_files += 1
                result.deleted_bytes += freed
                result.deleted_stale += candidate.stale
                result.oldest_deleted = result.oldest_deleted or candidate.used
                result.newest_deleted = candidate.used
        finally:
            os.close(root_fd)
        result.used_after, result.total = (used - result.deleted_bytes, total) if self.counts_by_scan else self._usage()
        result.seconds = time.monotonic() - started
        # Never a file younger than a pass: the next pass spares what this one took to go over.
        self.min_age = max(settings.min_age_seconds, result.seconds)
        self.metrics.record(result, settings)
        return result

    def run(self, log: Callable[[str], None]) -> None:
        idle = 0
        while not self.stopping.is_set():
            result = self.one_pass()
            if result.scanned is not None or idle % 30 == 0:  # every pass that deletes; idle ones now and then
                log(result.line(self.settings))
            idle = 0 if result.scanned is not None else idle + 1
            self.stopping.wait(self.settings.poll_seconds)


class Metrics(Exposition):
    """The evictor's Prometheus metrics, in the text exposition format."""

    COUNTERS = ("passes", "scans", "scanned_files", "deleted_files", "deleted_bytes", "vanished_files", "denied")

    def __init__(self) -> None:
        super().__init__("tier_evictor", self.COUNTERS)

    def usage(self, used: int, total: int, settings: Settings) -> None:
        with self.lock:
            ratio = used / total if total else 0.0
            self._gauge(usage_ratio=ratio, used_bytes=used, capacity_bytes=total)
            self._gauge(high_watermark_ratio=settings.high, low_watermark_ratio=settings.low)

    def record(self, result: PassResult, settings: Settings) -> None:
        s = result.scanned
        with self.lock:
            self._add(passes=1)
            ratio = result.used_after / result.total if result.total else 0.0
            self._gauge(usage_ratio=ratio, last_pass_timestamp_seconds=time.time())
            if s is None:
                return
            self._add(scans=1, scanned_files=s.files, deleted_files=result.deleted_files)
            self._add(deleted_bytes=result.deleted_bytes, vanished_files=s.vanished, denied=s.denied)
            self._gauge(scan_seconds=s.seconds, pass_seconds=result.seconds, files=s.files, stale_bytes=s.stale_bytes)


def main() -> int:
    try:
        settings = Settings.from_env(dict(os.environ))
    except (KeyError, ValueError) as e:
        print(f"tier evictor: bad configuration: {e}", file=sys.stderr)
        return 2
    evictor = Evictor(settings)
    signal.signal(signal.SIGTERM, lambda *_: evictor.stopping.set())
    serve_metrics(evictor.metrics, settings.metrics_port)
    print(f"tier evictor started: {settings}", flush=True)  # every setting, by name
    evictor.run(lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
