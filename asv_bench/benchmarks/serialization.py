"""Checkpoint save/load throughput: ember.save/ember.load beside torch.save/torch.load
on the same 200 MB float32 state_dict (50 tensors of 4 MB), to a file on disk.

ember.save fsyncs (atomic save); torch.save does not, so both are timed with and
without the OS page cache in mind: the figures are wall-clock, page cache warm.
Run standalone for an MB/s table:  python asv_bench/benchmarks/serialization.py [MB]"""
import os
import sys
import tempfile
import timeit
from collections import OrderedDict

import numpy as np

N_TENSORS = 50


def _state_dict(lib, total_mb):
    rng = np.random.default_rng(0)
    n = total_mb * (1 << 20) // 4 // N_TENSORS
    arrays = [rng.standard_normal(n, dtype=np.float32) for _ in range(N_TENSORS)]
    return OrderedDict((f"layer{i}.weight", lib.from_numpy(a)) for i, a in enumerate(arrays))


def _lib(name):
    if name == "ember":
        import ember
        return ember
    try:
        import torch
    except ImportError:
        raise NotImplementedError("torch is not installed")
    return torch


class SaveLoad:
    params = [["ember", "torch"]]
    param_names = ["library"]
    timer = timeit.default_timer
    number = 1
    repeat = 3
    total_mb = 200

    def setup(self, library):
        self.lib = _lib(library)
        self.sd = _state_dict(self.lib, self.total_mb)
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "sd.pt")
        self.lib.save(self.sd, self.path)

    def teardown(self, library):
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        os.rmdir(self.dir)

    def time_save(self, library):
        self.lib.save(self.sd, self.path)

    def time_load(self, library):
        self.lib.load(self.path)

    def time_load_mmap(self, library):
        self.lib.load(self.path, mmap=True)


def _best(fn, repeat=3):
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def main(total_mb=200):
    rows = []
    for name in ("ember", "torch"):
        try:
            lib = _lib(name)
        except NotImplementedError:
            continue
        sd = _state_dict(lib, total_mb)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sd.pt")
            lib.save(sd, path)
            t_save = _best(lambda: lib.save(sd, path))
            t_load = _best(lambda: lib.load(path))
            t_mmap = _best(lambda: lib.load(path, mmap=True))
            extra = ""
            if name == "ember":
                import ember.serialization as S
                from ember._serialization import _io

                orig = _io.os.fsync
                _io.os.fsync = lambda fd: None
                try:
                    extra = f"   (save without fsync: {total_mb / _best(lambda: lib.save(sd, path)):.0f} MB/s)"
                finally:
                    _io.os.fsync = orig
        rows.append((name, total_mb / t_save, total_mb / t_load, total_mb / t_mmap, extra))
    print(f"{total_mb} MB state_dict ({N_TENSORS} float32 tensors), file on disk, best of 3")
    print(f"{'library':8s} {'save MB/s':>10s} {'load MB/s':>10s} {'load mmap MB/s':>15s}")
    for name, s, l, m, extra in rows:
        print(f"{name:8s} {s:10.0f} {l:10.0f} {m:15.0f}{extra}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
