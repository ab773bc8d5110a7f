"""The CPU caching allocator (src_c/alloc.c), driven by real tensors and checked
through its counters (``ember._C.core._alloc_stats``).  Each scenario runs in a
fresh interpreter, so no block cached by another test can serve its requests."""
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20

PRELUDE = """
import json
import ember
from ember._C import core
S = core._alloc_stats
MiB = 1 << 20
core._empty_cache()
out = {}
"""


def run(body: str, cache_mb: str | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": ROOT}
    env.pop("EMBER_CACHE_MB", None)
    if cache_mb is not None:
        env["EMBER_CACHE_MB"] = cache_mb
    code = PRELUDE + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def delta(a: dict, b: dict) -> dict:
    return {k: b[k] - a[k] for k in a}


def test_larger_free_block_is_split_and_merged_back():
    out = run("""
        x = ember.empty(2 * MiB)                # 8 MiB: one segment
        p = x.data_ptr()
        out["s0"] = S()
        del x
        out["s1"] = S()
        a, b = ember.empty(MiB), ember.empty(MiB)   # two 4 MiB tensors from the 8 MiB block
        out["ptrs"] = [a.data_ptr() - p, b.data_ptr() - p]
        out["s2"] = S()
        del a, b
        out["s3"] = S()
        c = ember.empty(2 * MiB)                # the halves merged: 8 MiB again
        out["c"] = c.data_ptr() - p
        out["s4"] = S()
    """)
    s0, s1, s2, s3, s4 = (out[k] for k in ("s0", "s1", "s2", "s3", "s4"))
    assert s0["allocated_bytes"] >= 8 * MiB
    d = delta(s0, s1)
    assert d["allocated_bytes"] == -8 * MiB and d["reserved_bytes"] == 0
    assert d["cached_bytes"] == 8 * MiB and d["cached_blocks"] == 1
    d = delta(s1, s2)
    assert out["ptrs"] == [0, 4 * MiB]
    assert d["reserved_bytes"] == 0 and d["misses"] == 0 and d["segments"] == 0
    assert d["hits"] == 2 and d["splits"] == 1 and d["allocated_bytes"] == 8 * MiB
    assert d["cached_blocks"] == -1
    d = delta(s1, s3)
    assert d["cached_blocks"] == 0 and d["cached_bytes"] == 0 and d["allocated_bytes"] == 0
    d = delta(s3, s4)
    assert out["c"] == 0 and d["hits"] == 1 and d["misses"] == 0 and d["splits"] == 0
    assert s4["peak_reserved_bytes"] == s0["reserved_bytes"]


def test_best_fit_and_latest_freed_first():
    out = run("""
        big, small1, small2 = ember.empty(4 * MiB), ember.empty(MiB), ember.empty(MiB)
        pb, p1, p2 = big.data_ptr(), small1.data_ptr(), small2.data_ptr()
        del big, small1, small2
        s0 = S()
        a = ember.empty(MiB)                    # 4 MiB: the last freed of the two that fit
        b = ember.empty(MiB)                    # the other one, not a piece of big's 16 MiB
        out["a"] = [a.data_ptr() == p2, a.data_ptr() == p1]
        out["b"] = [b.data_ptr() == p1, b.data_ptr() == pb]
        out["d"] = {k: S()[k] - s0[k] for k in s0}
    """)
    assert out["a"] == [True, False] and out["b"] == [True, False]
    assert out["d"]["splits"] == 0 and out["d"]["hits"] == 2 and out["d"]["misses"] == 0


def test_small_and_huge_pools_are_separate():
    out = run("""
        x = ember.empty(MiB)                    # 4 MiB, huge-page pool
        del x
        s0 = S()
        m = ember.empty(64 * 1024)              # 256 KiB: its own segment, not a piece of x
        s1 = S()
        n = ember.empty(32 * 1024)              # 128 KiB: after m is freed, a piece of it
        del m
        s2 = S()
        k = ember.empty(16 * 1024)              # 64 KiB from m's 256 KiB block
        s3 = S()
        tiny = ember.empty(100)                 # below 64 KiB: malloc, not counted
        s4 = S()
        out["d1"], out["d3"], out["d4"] = (
            {k_: b[k_] - a[k_] for k_ in a} for a, b in ((s0, s1), (s2, s3), (s3, s4)))
    """)
    d1, d3, d4 = out["d1"], out["d3"], out["d4"]
    assert d1["misses"] == 1 and d1["reserved_bytes"] == 256 * 1024 and d1["hits"] == 0
    assert d3["hits"] == 1 and d3["splits"] == 1 and d3["reserved_bytes"] == 0
    assert d3["allocated_bytes"] == 64 * 1024
    assert all(v == 0 for v in d4.values())


def test_cache_limit_and_empty_cache():
    out = run("""
        xs = [ember.empty(2 * MiB) for _ in range(3)]     # 3 x 8 MiB
        s0 = S()
        del xs
        out["capped"] = S()["cached_bytes"]
        out["released"] = S()["released_segments"] - s0["released_segments"]
        y = ember.empty(2 * MiB)                # the cached 8 MiB block
        del y
        a = ember.empty(MiB)                    # 4 MiB: a piece of it
        core._empty_cache()                     # a's segment stays: it is in use
        out["kept"] = S()["reserved_bytes"] - S()["allocated_bytes"]
        del a
        core._empty_cache()
        out["after"] = S()["cached_bytes"]
    """, cache_mb="10")
    assert out["capped"] <= 10 * MiB and out["released"] == 2
    assert out["kept"] == 4 * MiB and out["after"] == 0


def test_cache_off_keeps_nothing():
    out = run("""
        s0 = S()
        for _ in range(3):
            x = ember.ones(2 * MiB) + 1
            del x
        s1 = S()
        out["d"] = {k: s1[k] - s0[k] for k in s0}
        out["cached"] = s1["cached_bytes"]
    """, cache_mb="0")
    d = out["d"]
    assert out["cached"] == 0 and d["hits"] == 0 and d["splits"] == 0
    assert d["misses"] == d["released_segments"] >= 6


def test_training_steps_reach_a_steady_state():
    out = run("""
        import ember.nn as nn
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256))
        opt = ember.optim.Adam(model.parameters(), lr=1e-3)
        x, y = ember.randn(256, 256), ember.randn(256, 256)
        stats = []
        for _ in range(6):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            stats.append(S())
        out["stats"] = stats
    """)
    st = out["stats"]
    # after the first steps every request is served from the cache: no new segments
    assert st[-1]["misses"] == st[2]["misses"]
    assert st[-1]["reserved_bytes"] == st[2]["reserved_bytes"]
    assert st[-1]["hits"] - st[2]["hits"] >= 3 * 6      # activations and grads, each step
    assert st[-1]["peak_reserved_bytes"] == st[2]["peak_reserved_bytes"]
