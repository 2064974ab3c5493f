"""The tier evictor's speed and memory on this machine: a tree of N block files (sparse, vLLM-like hashed
directories), one scan, one pass down to the low watermark; files scanned and deleted per second, and the
peak memory of the process (ru_maxrss) over its baseline.

    .venv/bin/python benchmarks/tier_evictor.py [--files 1000000] [--candidates 1000000] [--dir /tmp]

Each run is a fresh process (the peak is the process's own), and the tree is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.tier_evictor.evict_tier import Evictor, Settings
from components.tier_evictor.tier_scan import scan

BLOCK = 32 * 2**20


def build(root: Path, files: int) -> None:
    now = time.time()
    made: set[Path] = set()
    for i in range(files):
        h = f"{i * 2654435761 % 2**32:08x}"
        directory = root / "Qwen3-32B_r0" / h[:3] / h[3:5]
        if directory not in made:
            directory.mkdir(parents=True, exist_ok=True)
            made.add(directory)
        path = directory / f"{h}-{i}.bin"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.ftruncate(fd, BLOCK)
        t = now - 3600 - (files - i)
        os.utime(fd, (t, t))
        os.close(fd)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--candidates", type=int, default=1_000_000)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tier-evictor-bench-", dir=args.dir))
    root = base / "kv-cache"
    try:
        started = time.monotonic()
        build(root, args.files)
        print(f"built {args.files} files in {time.monotonic() - started:.0f} s", flush=True)
        baseline = rss_mib()
        found = scan(str(root), time.time(), 60, args.candidates, "atime")
        print(
            f"scan: {found.files} files in {found.seconds:.1f} s = {found.files / found.seconds:,.0f} files/s;"
            f" {len(found.heap)} candidates kept; peak RSS {rss_mib():.0f} MiB ({rss_mib() - baseline:.0f} MiB"
            f" over the {baseline:.0f} MiB baseline)",
            flush=True,
        )
        del found
        capacity = args.files * BLOCK * 100 // 85
        used = [args.files * BLOCK]

        def usage() -> tuple[int, int]:
            return used[0], capacity

        settings = Settings(str(root), 0.8, 0.6, 60.0, 1.0, args.candidates, "atime", "statvfs", 0, 0)
        evictor = Evictor(settings, usage)
        result = evictor.one_pass()
        scan_s = result.scanned.seconds if result.scanned else 0.0
        delete_s = result.seconds - scan_s
        print(result.line(settings))
        print(
            f"pass: deleted {result.deleted_files} files in {delete_s:.1f} s ="
            f" {result.deleted_files / delete_s:,.0f} files/s (after a {scan_s:.1f} s scan); peak RSS"
            f" {rss_mib():.0f} MiB",
            flush=True,
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
