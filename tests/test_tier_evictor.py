"""The tier evictor's script against a real directory tree in tmp_path (no mocks of the file system).

Files have the tier's block size (Qwen3-32B's 256-token block at TP 2: 32 MiB per rank file) and are sparse:
the evictor accounts a file by its size, so a tree of thousands of them costs no disk. The capacity is
simulated: the usage function sums the sizes under the tree (what `df` would show if the tree were alone on
a file system of `capacity` bytes), so a test reaches the watermarks without filling a disk.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest

from components.specs import tier_evictor as tier_evictor_spec
from components.tier_evictor import evict_tier, tier_scan
from components.tier_evictor.evict_tier import Evictor, Settings
from components.tier_evictor.tier_scan import scan

BLOCK = 32 * 2**20  # 256 tokens x 256 KiB per token / TP 2
HOUR = 3600.0


def settings(root: Path, high: float = 0.8, low: float = 0.6, **kw: object) -> Settings:
    base: dict[str, object] = dict(
        tier_dir=str(root),
        high=high,
        low=low,
        min_age_seconds=60.0,
        poll_seconds=0.01,
        max_candidates=100_000,
        timestamp="atime",
        usage="statvfs",
        capacity_bytes=0,
        metrics_port=0,
    )
    base.update(kw)
    return Settings(**base)  # type: ignore[arg-type]


def tree_bytes(root: Path) -> int:
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total


def usage_of(root: Path, capacity: int) -> evict_tier.Usage:
    return lambda: (tree_bytes(root), capacity)


def block_file(path: Path, age_seconds: float, size: int = BLOCK, now: float | None = None) -> Path:
    """A block file of the tier (sparse), last used `age_seconds` ago."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    t = (now or time.time()) - age_seconds
    os.utime(path, (t, t))
    return path


def vllm_like_tree(root: Path, files: int, oldest_hours: float = 10.0) -> list[Path]:
    """A layout like vLLM's filesystem tier (hashed directories per model and rank); file i is older than
    file i+1 (ages spread over `oldest_hours` down to 2 minutes)."""
    now = time.time()
    out = []
    for i in range(files):
        h = f"{i * 2654435761 % 2**32:08x}"
        age = 120 + (oldest_hours * HOUR - 120) * (files - 1 - i) / max(files - 1, 1)
        out.append(block_file(root / "Qwen3-32B_r0" / h[:3] / h[3:5] / f"{h}.bin", age, now=now))
    return out


def test_ends_at_the_low_watermark_deleting_oldest_first(tmp_path: Path) -> None:
    root = tmp_path / "kv-cache"
    files = vllm_like_tree(root, 1000)
    capacity = 1000 * BLOCK * 100 // 85  # 85% full
    evictor = Evictor(settings(root), usage_of(root, capacity))
    result = evictor.one_pass()
    assert result.scanned is not None and result.scanned.files == 1000
    used, _ = evictor._usage()
    assert used <= 0.6 * capacity  # at the low watermark ...
    assert used > 0.6 * capacity - BLOCK  # ... and not one block below it
    kept = [f.exists() for f in files]
    deleted = kept.index(True)
    assert deleted == result.deleted_files == 1000 - int(0.6 * capacity) // BLOCK
    assert all(kept[deleted:]) and not any(kept[:deleted])  # exactly the oldest ones
    assert "deleted" in result.line(evictor.settings) and "oldest first" in result.line(evictor.settings)


def test_below_the_high_watermark_nothing_is_scanned_or_deleted(tmp_path: Path) -> None:
    root = tmp_path / "kv-cache"
    files = vllm_like_tree(root, 100)
    evictor = Evictor(settings(root), usage_of(root, 100 * BLOCK * 100 // 79))  # 79% < 80%
    result = evictor.one_pass()
    assert result.scanned is None and all(f.exists() for f in files)
    assert "below the high watermark" in result.line(evictor.settings)


def test_a_read_makes_a_file_recent_under_atime_but_not_under_mtime(tmp_path: Path) -> None:
    """Lustre keeps a read's atime (`atime` orders by the later of access and write); EFS does not update
    atime on reads, so there only the write counts (`mtime`)."""
    for timestamp, survives in (("atime", True), ("mtime", False)):
        root = tmp_path / timestamp
        files = vllm_like_tree(root, 10)
        t = time.time() - 600  # read 10 minutes ago: older than a pass, newer than every write
        os.utime(files[0], (t, os.stat(files[0]).st_mtime))
        evictor = Evictor(settings(root, high=0.5, low=0.45, timestamp=timestamp), usage_of(root, 10 * BLOCK))
        evictor.one_pass()
        assert files[0].exists() is survives
        assert not files[1].exists()


def test_never_deletes_a_file_younger_than_a_pass(tmp_path: Path) -> None:
    root = tmp_path / "kv-cache"
    young = [block_file(root / f"young-{i}.bin", age_seconds=30) for i in range(10)]  # min age 60 s
    old = [block_file(root / f"old-{i}.bin", age_seconds=HOUR) for i in range(2)]
    evictor = Evictor(settings(root, high=0.5, low=0.1), usage_of(root, 12 * BLOCK))
    result = evictor.one_pass()
    assert all(f.exists() for f in young) and not any(f.exists() for f in old)
    assert result.scanned is not None and result.scanned.young == 10
    # The low watermark is out of reach while the rest is younger than a pass: it stops, and says so.
    assert result.used_after == 10 * BLOCK
    assert "skipped 10 younger than 60 s" in result.line(evictor.settings)


def test_the_minimum_age_grows_to_the_last_pass(tmp_path: Path) -> None:
    """A pass that took longer than the configured minimum age spares, next time, what it took to go over."""
    root = tmp_path / "kv-cache"
    vllm_like_tree(root, 20)

    def slow_usage() -> tuple[int, int]:
        time.sleep(0.05)
        return tree_bytes(root), 20 * BLOCK

    evictor = Evictor(settings(root, high=0.5, low=0.4, min_age_seconds=0.0), slow_usage)
    evictor.one_pass()
    assert evictor.min_age >= 0.1  # two readings of the usage
    fast = Evictor(settings(root, high=0.5, low=0.4, min_age_seconds=60.0), usage_of(root, 20 * BLOCK))
    fast.one_pass()
    assert fast.min_age == 60.0


def test_a_file_being_written_is_never_deleted(tmp_path: Path) -> None:
    """A writer that keeps writing moves the file's mtime: it stays younger than a pass."""
    root = tmp_path / "kv-cache"
    vllm_like_tree(root, 50)
    writing = root / "Qwen3-32B_r0" / "fff" / "ff" / "being-written.bin"
    writing.parent.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()

    def writer() -> None:
        with open(writing, "wb") as f:
            while not stop.is_set():
                f.write(b"\0" * 65536)
                f.flush()
                time.sleep(0.001)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(0.05)
        evictor = Evictor(settings(root, high=0.1, low=0.01), usage_of(root, 50 * BLOCK))
        evictor.one_pass()
    finally:
        stop.set()
        thread.join()
    assert writing.exists()
    assert tree_bytes(root) == writing.stat().st_size  # every old block went, the one being written stayed


def test_a_file_written_after_the_scan_is_spared(tmp_path: Path) -> None:
    """A candidate rewritten between the scan and its deletion is no longer the file the scan judged."""
    root = tmp_path / "kv-cache"
    files = vllm_like_tree(root, 5)
    evictor = Evictor(settings(root, high=0.5, low=0.01), usage_of(root, 5 * BLOCK))
    found = scan(str(root), time.time(), 60, 100, "atime")
    with open(files[0], "ab") as f:
        f.write(b"x")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        oldest = found.oldest_first()[0]
        assert oldest.path[-1] == files[0].name
        assert tier_scan.delete_inside(fd, oldest, time.time(), 60, "atime") == 0
    finally:
        os.close(fd)
    assert files[0].exists()
    evictor.one_pass()
    assert files[0].exists() and not files[1].exists()


def test_concurrent_writers_and_vanishing_files(tmp_path: Path) -> None:
    """Writers add blocks while it runs and another process deletes some under it: it never fails, never
    touches what was written during the pass, and deletes oldest first among what is left."""
    root = tmp_path / "kv-cache"
    files = vllm_like_tree(root, 2000)
    capacity = 2000 * BLOCK * 100 // 95
    stop, started, added = threading.Event(), threading.Event(), []

    def writer() -> None:
        i = 0
        while not stop.is_set():
            added.append(block_file(root / "Qwen3-32B_r1" / f"new-{i}.bin", age_seconds=0))
            i += 1
            time.sleep(0.0005)

    vanishing = files[::7]

    def vanisher() -> None:
        started.wait()
        for f in vanishing:
            f.unlink(missing_ok=True)

    def usage() -> tuple[int, int]:
        used = tree_bytes(root)
        started.set()  # the pass has begun: files start vanishing under it
        return used, capacity

    threads = [threading.Thread(target=writer), threading.Thread(target=vanisher)]
    for t in threads:
        t.start()
    try:
        result = Evictor(settings(root), usage).one_pass()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert result.scanned is not None and result.deleted_files > 0
    assert added and all(f.exists() for f in added)  # nothing written during the pass was touched
    others = [f for f in files if f not in set(vanishing)]
    left = [f for f in others if f.exists()]
    assert left == others[len(others) - len(left) :]  # oldest first: what is left is the newest
    assert len(left) < len(others)


def test_vanishing_files_during_deletion_are_counted(tmp_path: Path) -> None:
    root = tmp_path / "kv-cache"
    files = vllm_like_tree(root, 20)
    found = scan(str(root), time.time(), 60, 100, "atime")
    for f in files[:5]:
        f.unlink()
    evictor = Evictor(settings(root, high=0.1, low=0.01), usage_of(root, 20 * BLOCK))
    evictor.one_pass()
    assert found.files == 20
    assert tree_bytes(root) == 0


UNPRIVILEGED = 65534  # nobody: root reads and deletes regardless of permissions
ONE_PASS = """
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("evict_tier", sys.argv[3])
evict_tier = importlib.util.module_from_spec(spec)
sys.modules["evict_tier"] = evict_tier
spec.loader.exec_module(evict_tier)
Evictor, Settings = evict_tier.Evictor, evict_tier.Settings
root, capacity = sys.argv[1], int(sys.argv[2])
def usage():
    used = sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(root) for f in fs)
    return used, capacity
s = Settings(root, 0.1, 0.01, 60.0, 0.01, 1000, "atime", "statvfs", 0, 0)
r = Evictor(s, usage).one_pass()
print(json.dumps({"deleted": r.deleted_files, "denied": r.scanned.denied}))
"""


def test_permission_errors_are_counted_and_skipped() -> None:
    """A directory it may not read is not scanned, a file it may not unlink stays; the rest goes. Run as an
    unprivileged user (the suite may run as root, who is refused nothing)."""
    import json
    import shutil
    import subprocess
    import sys
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="tier-evictor-"))  # outside pytest's root-only tmp_path
    try:
        base.chmod(0o755)
        root = base / "kv-cache"
        vllm_like_tree(root, 20)
        locked_dir, sealed_dir = root / "locked", root / "sealed"
        locked_file = block_file(locked_dir / "a.bin", age_seconds=HOUR * 100)  # the oldest of all
        sealed_file = block_file(sealed_dir / "b.bin", age_seconds=HOUR * 99)
        # The package beside the tree, as its ConfigMap lays it out (components/specs/tier_evictor.py MODULES): the
        # checkout may sit under a directory the unprivileged user cannot enter.
        for path, module in tier_evictor_spec.MODULES.items():
            (base / "components" / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(module, base / "components" / path)
        script = base / "components" / "tier_evictor" / "evict_tier.py"
        if os.geteuid() == 0:
            for directory, dirs, names in os.walk(base):
                for name in [*dirs, *names, "."]:
                    os.chown(os.path.join(directory, name), UNPRIVILEGED, UNPRIVILEGED)
        locked_dir.chmod(0o000)  # cannot be read: not scanned
        sealed_dir.chmod(0o555)  # readable, but its files cannot be unlinked
        # The script needs only the standard library: an interpreter the unprivileged user can run will do.
        python = shutil.which("python3", path="/usr/local/bin:/usr/bin") if os.geteuid() == 0 else sys.executable
        if python is None:
            pytest.skip("no system python3 for the unprivileged user")
        command = [python, "-c", ONE_PASS, str(root), str(22 * BLOCK), str(script)]
        as_user = {"user": UNPRIVILEGED, "group": UNPRIVILEGED} if os.geteuid() == 0 else {}
        done = subprocess.run(command, capture_output=True, text=True, cwd=base, check=True, **as_user)  # type: ignore[call-overload]
        assert json.loads(done.stdout) == {"deleted": 20, "denied": 2}  # the directory, the unlink
        assert locked_file.exists() and sealed_file.exists()
    finally:
        for d in (base / "kv-cache" / "locked", base / "kv-cache" / "sealed"):
            if d.exists():
                d.chmod(0o755)
        shutil.rmtree(base)


def test_never_crosses_out_of_its_directory(tmp_path: Path) -> None:
    """Symlinks to outside files and directories are neither followed nor deleted; a directory swapped for a
    symlink between the scan and the deletion is refused."""
    root, outside = tmp_path / "kv-cache", tmp_path / "weights"
    precious = [block_file(outside / f"model-{i}.safetensors", age_seconds=HOUR * 1000) for i in range(3)]
    inside = vllm_like_tree(root, 10)
    (root / "link-to-dir").symlink_to(outside, target_is_directory=True)
    (root / "link-to-file").symlink_to(precious[0])
    swapped = block_file(root / "swap" / "model-1.safetensors", age_seconds=HOUR * 500)
    found = scan(str(root), time.time(), 60, 100, "atime")
    assert found.files == 11 and found.skipped_other == 2  # the two symlinks
    # Between the scan and the deletion, `swap` becomes a symlink to the weights.
    swapped.unlink()
    (root / "swap").rmdir()
    (root / "swap").symlink_to(outside, target_is_directory=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        candidate = found.oldest_first()[0]
        assert candidate.path == ("swap", "model-1.safetensors")
        with pytest.raises(tier_scan.OutsideError):
            tier_scan.delete_inside(fd, candidate, time.time(), 60, "atime")
    finally:
        os.close(fd)
    evictor = Evictor(settings(root, high=0.01, low=0.001), usage_of(root, 10 * BLOCK))
    evictor.one_pass()
    assert all(p.exists() for p in precious)
    assert (root / "link-to-dir").is_symlink() and (root / "link-to-file").is_symlink()
    assert not any(f.exists() for f in inside)


def test_a_full_disk_is_brought_to_the_low_watermark(tmp_path: Path) -> None:
    """At 100% the evictor needs no space of its own: it deletes down to the low watermark in one pass."""
    root = tmp_path / "kv-cache"
    vllm_like_tree(root, 500)
    evictor = Evictor(settings(root), usage_of(root, 500 * BLOCK))
    result = evictor.one_pass()
    assert result.used_before == result.total
    assert 0.6 * result.total - BLOCK < result.used_after <= 0.6 * result.total


def test_memory_is_bounded_by_the_candidates_kept(tmp_path: Path) -> None:
    """A scan keeps the `limit` oldest files, not every file: a pass over more deletes what it holds, the next
    pass continues, and both delete oldest first."""
    root = tmp_path / "kv-cache"
    files = vllm_like_tree(root, 300)
    found = scan(str(root), time.time(), 60, 25, "atime")
    assert found.files == 300 and len(found.heap) == 25
    assert [c.path[-1] for c in found.oldest_first()] == [f.name for f in files[:25]]
    evictor = Evictor(settings(root, high=0.5, low=0.1, max_candidates=25), usage_of(root, 300 * BLOCK))
    first = evictor.one_pass()
    assert first.deleted_files == 25 and all(f.exists() for f in files[25:])
    second = evictor.one_pass()
    assert second.deleted_files == 25 and not any(f.exists() for f in files[:50])


def test_usage_by_scan_counts_the_directory_against_its_budget(tmp_path: Path) -> None:
    """EFS is elastic: the claim's size is the budget, the usage what the tier's directory holds."""
    root = tmp_path / "kv-cache"
    vllm_like_tree(root, 100)
    s = settings(root, usage="scan", capacity_bytes=110 * BLOCK)  # 91%
    evictor = Evictor(s)
    result = evictor.one_pass()
    assert result.used_before == 100 * BLOCK
    assert result.used_after == tree_bytes(root) <= 0.6 * 110 * BLOCK


def test_statvfs_usage_reads_the_real_file_system(tmp_path: Path) -> None:
    used, total = evict_tier.statvfs_usage(str(tmp_path))()
    assert 0 < used < total


def test_settings_refuse_hostile_values(tmp_path: Path) -> None:
    env = {"TIER_DIR": str(tmp_path), "HIGH_WATERMARK_PERCENT": "80", "LOW_WATERMARK_PERCENT": "60"}
    assert Settings.from_env(env).high == 0.8
    for high, low in (("60", "80"), ("101", "60"), ("80", "0"), ("80", "80")):
        with pytest.raises(ValueError, match="watermarks"):
            Settings.from_env({**env, "HIGH_WATERMARK_PERCENT": high, "LOW_WATERMARK_PERCENT": low})
    with pytest.raises(ValueError, match="CAPACITY_BYTES"):
        Settings.from_env({**env, "USAGE": "scan"})


def test_metrics_and_log_line(tmp_path: Path) -> None:
    root = tmp_path / "kv-cache"
    vllm_like_tree(root, 10)
    evictor = Evictor(settings(root, high=0.5, low=0.2), usage_of(root, 10 * BLOCK))
    lines: list[str] = []
    threading.Timer(0.2, evictor.stopping.set).start()
    evictor.run(lines.append)
    text = evictor.metrics.text()
    assert "tier_evictor_deleted_files_total 8" in text
    assert f"tier_evictor_deleted_bytes_total {8 * BLOCK}" in text
    assert "tier_evictor_usage_ratio 0.2" in text and "tier_evictor_scan_seconds" in text
    assert lines[0].startswith("pass 1: usage 100.0% (high 50%, low 20%): scanned 10 files (0.3 GiB)")


def namespaced_tree(root: Path) -> dict[str, list[Path]]:
    """The tier as the servers write it: one directory per namespace. The live namespace holds the OLDEST files,
    a former one newer files, and the layout before namespaces files at the top level (the newest of all)."""
    now = time.time()
    return {
        "live": [
            block_file(root / "Qwen3-32B-aaaaaaaaaaaa" / f"{i:03x}.bin", HOUR * (50 - i), now=now) for i in range(10)
        ],
        "former": [
            block_file(root / "Qwen3-32B-bbbbbbbbbbbb" / f"{i:03x}.bin", HOUR * (20 - i), now=now) for i in range(10)
        ],
        "flat": [block_file(root / f"{i:03x}_2.bin", HOUR * (10 - i), now=now) for i in range(5)],
    }


def test_namespaces_no_server_writes_go_first_oldest_first_and_the_live_one_last(tmp_path: Path) -> None:
    root = tmp_path / "kv-cache"
    files = namespaced_tree(root)
    live = frozenset({"Qwen3-32B-aaaaaaaaaaaa"})
    # 25 files at 100%: down to 40% deletes 15, every stale one; then down to 10% five more, the live oldest.
    evictor = Evictor(settings(root, high=0.9, low=0.4, live_namespaces=live), usage_of(root, 25 * BLOCK))
    result = evictor.one_pass()
    assert result.deleted_files == result.deleted_stale == 15
    assert not any(f.exists() for f in files["former"] + files["flat"])
    assert all(f.exists() for f in files["live"])  # older than every stale file, still kept
    assert "15 of the 15 outside the live namespaces first" in result.line(evictor.settings)
    evictor = Evictor(settings(root, high=0.3, low=0.2, live_namespaces=live), usage_of(root, 25 * BLOCK))
    result = evictor.one_pass()
    assert (result.deleted_files, result.deleted_stale) == (5, 0)
    assert [f.exists() for f in files["live"]] == [False] * 5 + [True] * 5  # then the live one, oldest first


def test_without_live_namespaces_the_order_is_age_alone(tmp_path: Path) -> None:
    root = tmp_path / "kv-cache"
    files = namespaced_tree(root)
    Evictor(settings(root, high=0.9, low=0.6), usage_of(root, 25 * BLOCK)).one_pass()
    assert not any(f.exists() for f in files["live"]) and all(f.exists() for f in files["flat"])


def test_a_bounded_scan_keeps_the_stale_files_first(tmp_path: Path) -> None:
    root = tmp_path / "kv-cache"
    files = namespaced_tree(root)
    found = scan(str(root), time.time(), 60, 12, "atime", frozenset({"Qwen3-32B-aaaaaaaaaaaa"}))
    assert (found.files, found.stale_files, found.stale_bytes) == (25, 15, 15 * BLOCK)
    kept = [c.path for c in found.oldest_first()]
    stale_in_age_order = [f.relative_to(root).parts for f in files["former"] + files["flat"]]
    assert kept == [tuple(p) for p in stale_in_age_order[:12]]


@pytest.mark.parametrize("value", ["a/b", "..", "ok,.", "/abs"])
def test_a_live_namespace_that_is_not_one_directory_name_is_refused(value: str) -> None:
    env = {"TIER_DIR": "/t", "HIGH_WATERMARK_PERCENT": "90", "LOW_WATERMARK_PERCENT": "80", "LIVE_NAMESPACES": value}
    with pytest.raises(ValueError, match="LIVE_NAMESPACES"):
        Settings.from_env(env)
    parsed = Settings.from_env({**env, "LIVE_NAMESPACES": "Qwen3-32B-aaaaaaaaaaaa,Qwen3-8B-bbbbbbbbbbbb"})
    assert parsed.live_namespaces == {"Qwen3-32B-aaaaaaaaaaaa", "Qwen3-8B-bbbbbbbbbbbb"}


def test_the_configmap_runs_as_the_package_it_lays_out(tmp_path: Path) -> None:
    """The pod's terms: the ConfigMap's files at their items' paths, `python3 -m` from the mount (not the
    checkout: nothing of the repository is on the path)."""
    import subprocess
    import sys

    from components.specs import tier_evictor as spec

    [config_map, deployment] = spec.evictor_manifests(
        spec.EvictorSpec("ns", "python:3.12", "claim", None, "atime", "statvfs", "90", "80", 60, 10, 1000, 1, ("a-1",))
    )
    pod = deployment["spec"]["template"]["spec"]
    items = next(v for v in pod["volumes"] if v["name"] == "script")["configMap"]["items"]
    for item in items:
        target = tmp_path / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(config_map["data"][item["key"]])
    container = pod["containers"][0]
    assert container["workingDir"] == "/evictor"
    env = {"TIER_DIR": str(tmp_path), "HIGH_WATERMARK_PERCENT": "50", "LOW_WATERMARK_PERCENT": "60"}
    done = subprocess.run(
        [sys.executable, *container["command"][1:]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 2 and "tier evictor: bad configuration: watermarks" in done.stderr
