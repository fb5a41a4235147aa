"""Runs a per-file scan function over a tree: stat index, cache, a process pool, results in path order.

# NOTE [scan workers]
`scan_files` takes the relative paths of a tree and a pure function `scan(relpath, data, rules)`
and yields `(relpath, result)` sorted by path, whatever the number of workers: the output of a
run does not depend on `--jobs` or on what was cached. Per file, cheapest first:
  1. stat; if its signature (size, mtime_ns, inode, ctime_ns) matches the tree's index, the file
     is not read at all and its result is decoded from the index (or its cache entry; NOTE [stat
     validation], cache.py);
  2. otherwise (in a worker) read it, hash it; a cache entry for that content and path is used;
  3. otherwise scan it and store the result.
Step 2-3 run in a pool of `jobs` processes (fork where available, so the rules are not
re-loaded), in batches of a few consecutive files; a run with few files to read (the touched-one-
file case) never starts the pool. Results stream out through a bounded window, so memory does
not grow with the tree: no source is kept after its file is scanned, and at most `WINDOW` batches
are in flight. A file that cannot be read, or whose scan raises, goes to `on_error(relpath, exc)`
(which turns it into a result, e.g. a finding) and is never cached.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opscan.fsutil import read_source_bytes
from opscan.scan.cache import ResultCache, Signature, content_hash, entry_key, stat_key

ScanFn = Callable[[str, bytes, Any], Any]
ErrorFn = Callable[[str, Exception], Any]

POOL_MIN_FILES = 16      # fewer files to read than this: scan in-process, no pool start-up
MAX_BATCH = 8            # files per task sent to a worker
WINDOW_PER_JOB = 8       # batches in flight per worker


@dataclass(frozen=True)
class Codec:
    """How a result goes into the cache and back: encode -> JSON-able, decode -> result."""

    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]
    # whether a result earns an entry file of its own: one that costs no more to recompute than to
    # read back (a file the pre-check skipped) is kept in the stat index only
    entry: Callable[[Any], bool] | None = None


@dataclass
class RunStats:
    """What a run did, per file: counts for the run's notes and the benchmarks."""

    files: int = 0
    unread: int = 0          # result from the cache without reading the file (stat index)
    cache_hits: int = 0      # read and hashed, result from the cache
    scanned: int = 0         # scanned by the scan function
    errors: int = 0          # went to on_error
    workers: int = 0         # processes in the pool (0: in-process)


def default_jobs() -> int:
    """The default `--jobs`: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# -- the per-file work, in a worker or in-process --------------------------------------------------
ReadFn = Callable[[str, str], bytes]
# what each file's work needs: (scan, rules, cache, codec, on_error, read), handed to the workers once
Context = tuple[ScanFn, Any, "ResultCache | None", "Codec | None", "ErrorFn | None", "ReadFn | None"]
_CTX: Context | None = None


def _init(ctx: Context) -> None:
    global _CTX
    _CTX = ctx


def _one(ctx: Context, relpath: str, abspath: str) -> tuple[str, Any, str | None, str]:
    scan, rules, cache, codec, on_error, read = ctx
    try:
        # Regular files only, never blocking (a FIFO), never through a link out of the tree.
        if read is not None:
            data = read(relpath, abspath)
        else:
            root = _tree_root(abspath, relpath)
            data = read_source_bytes(Path(abspath), Path(root) if root is not None else None)
    except OSError as exc:
        if on_error is None:
            raise
        return relpath, on_error(relpath, exc), None, "error"
    sha = content_hash(data)
    key = entry_key(relpath, sha)
    if cache is not None:
        assert codec is not None     # scan_files refuses a cache without one
        payload = cache.get(key)
        if payload is not None:
            try:
                return relpath, codec.decode(payload), sha, "cache"
            except Exception:  # noqa: BLE001 - an entry that does not decode is corrupt: rescan
                pass
    try:
        result = scan(relpath, data, rules)
    except Exception as exc:  # one bad file never stops the rest
        if on_error is None:
            raise
        return relpath, on_error(relpath, exc), None, "error"
    if cache is not None and codec is not None:
        if codec.entry is None or codec.entry(result):
            cache.put(key, codec.encode(result))
    return relpath, result, sha, "scanned"


def _tree_root(abspath: str, relpath: str) -> str | None:
    """The scanned root `abspath` is under, or None for a file given outside it (user's choice)."""
    if relpath.startswith("../") or os.path.isabs(relpath):
        return None
    return abspath[: len(abspath) - len(relpath)].rstrip("/" + os.sep) or os.sep


def _batch(items: list[tuple[str, str]]) -> list[tuple[str, Any, str | None, str]]:
    assert _CTX is not None
    return [_one(_CTX, rel, path) for rel, path in items]


# -- the run ---------------------------------------------------------------------------------------
def scan_files(
    root: str | os.PathLike[str],
    relpaths: Iterable[str],
    scan: ScanFn,
    rules: Any,
    *,
    jobs: int | None = None,
    cache: ResultCache | None = None,
    codec: Codec | None = None,
    on_error: ErrorFn | None = None,
    stats: RunStats | None = None,
    full_walk: bool = True,
    read: Callable[[str, str], bytes] | None = None,
    prepare: Callable[[bool], None] | None = None,
) -> Iterator[tuple[str, Any]]:
    """Yield `(relpath, scan(relpath, bytes, rules))` for each file, sorted by relpath.

    Args:
        root: the folder the relative paths (with `/` separators) are in.
        relpaths: the files to scan (any order; duplicates are scanned once).
        scan: a pure, picklable function of (relpath, file bytes, rules).
        jobs: worker processes; None = default_jobs(); 1 = in-process.
        cache: where results are kept between runs; None = no cache, no stat index.
        codec: required with a cache.
        on_error: turns an unreadable file or a scan that raised into a result; None re-raises.
        stats: filled in as the run goes.
        full_walk: relpaths is the whole tree, so index entries of other paths can be dropped.
        read: `read(relpath, abspath) -> bytes`, the guarded read of a file (the run's project index,
            opscan/index); None: opscan/fsutil.py `read_source_bytes`.
        prepare: `prepare(pooled)` is called once, in this process, before the first file is read
            (never when every result comes from the stat index; `pooled`: worker processes are
            about to start): what the scan function needs that workers must not, or need not
            each, do themselves (NOTE [enrichments] in enrichment.py).
    """
    if cache is not None and codec is None:
        raise ValueError("a cache needs a codec")
    stats = stats if stats is not None else RunStats()
    root_path = Path(root)
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    index = None
    if cache is not None:
        cache.prepare()
        index = cache.load_index(root_path)

    # Pass 1: stat every file (cheap) to know how many must be read, and so whether to use a pool.
    plan: list[tuple[str, Signature | None, str | None]] = []
    for rel in sorted(set(relpaths)):
        try:
            st = stat_key(os.stat(os.path.join(root, rel)))
        except OSError:
            st = None
        known = index.lookup(rel, st) if (index is not None and st is not None) else None
        plan.append((rel, st, known))
    stats.files = len(plan)
    to_read = sum(1 for _, _, known in plan if known is None)
    workers = min(jobs, math.ceil(to_read / MAX_BATCH)) if to_read >= POOL_MIN_FILES else 1
    if prepare is not None and to_read:
        prepare(workers > 1)
    batch_size = max(1, min(MAX_BATCH, to_read // max(1, workers * 8)))
    ctx: Context = (scan, rules, cache, codec, on_error, read)
    pool = None
    if workers > 1:
        import multiprocessing   # only when there is work for a pool (a warm run has none)

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        pool = multiprocessing.get_context(method).Pool(workers, initializer=_init, initargs=(ctx,))
        stats.workers = workers
    stat_of: dict[str, Signature | None] = {}
    completed = False
    try:
        slots: deque[tuple[str, Any]] = deque()
        batch: list[tuple[str, str]] = []

        def flush() -> None:
            if batch:
                items = list(batch)
                batch.clear()
                if pool is not None:
                    slots.append(("async", pool.apply_async(_batch, (items,))))
                else:
                    slots.append(("done", [_one(ctx, rel, path) for rel, path in items]))

        def drain(limit: int) -> Iterator[tuple[str, Any]]:
            while len(slots) > limit:
                kind, value = slots.popleft()
                if kind == "hit":
                    yield value
                    continue
                for rel, result, sha, how in (value.get() if kind == "async" else value):
                    st = stat_of.pop(rel, None)
                    if how == "error":
                        stats.errors += 1
                        if index is not None:
                            index.forget(rel)
                    else:
                        stats.scanned += how == "scanned"
                        stats.cache_hits += how == "cache"
                        if index is not None and st is not None and sha is not None:
                            assert codec is not None
                            index.record(rel, st, sha, codec.encode(result))
                    yield rel, result

        window = workers * WINDOW_PER_JOB if pool is not None else 0  # in-process: no look-ahead
        for rel, st, known in plan:
            if known is not None:     # found in the stat index: a cache with its codec, a stat
                assert index is not None and cache is not None and codec is not None and st is not None
                payload = index.payload(rel)
                from_entry = payload is None
                if from_entry:
                    payload = cache.get(entry_key(rel, known))
                if payload is not None:
                    try:
                        result = codec.decode(payload)
                    except Exception:  # noqa: BLE001 - corrupt entry: read and rescan below
                        result = payload = None
                if payload is not None:
                    if from_entry:   # an entry recorded without its result: keep the result in it from now on
                        index.record(rel, st, known, payload)
                    flush()
                    stats.unread += 1
                    slots.append(("hit", (rel, result)))
                    yield from drain(window)
                    continue
            stat_of[rel] = st
            batch.append((rel, os.path.join(root, rel)))
            if len(batch) >= batch_size:
                flush()
                yield from drain(window)
        flush()
        yield from drain(0)
        completed = True
    finally:
        if pool is not None:
            if completed:
                pool.close()
            else:
                pool.terminate()
            pool.join()
        if cache is not None and index is not None:
            cache.save_index(root_path, index, prune=full_walk and completed)
