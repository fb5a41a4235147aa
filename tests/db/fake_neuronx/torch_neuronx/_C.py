"""The fake's counters: each read returns the counters after one more replay's compiles (7 new
entries missed, 2 found), as a real cache would between a read before and after a replay."""

_READS = [0]


def _get_compilation_cache_stats():
    _READS[0] += 1
    n = _READS[0] - 1
    return {"persistent_hits": 2 * n, "persistent_misses": 7 * n, "memory_hits": 0, "note": "not a counter"}
