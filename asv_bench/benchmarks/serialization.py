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


def main(total_mb=200, rounds=5):
    """Interleave the libraries round by round (fair on a busy machine); print MB/s,
    best and median over the rounds."""
    import statistics

    libs = {}
    for name in ("ember", "torch"):
        try:
            libs[name] = _lib(name)
        except NotImplementedError:
            pass
    from ember._serialization import _io

    real_sync = _io._sync
    with tempfile.TemporaryDirectory() as d:
        cases = {}
        for name, lib in libs.items():
            sd = _state_dict(lib, total_mb)
            path = os.path.join(d, f"{name}.pt")
            lib.save(sd, path)
            cases[(name, "save")] = lambda lib=lib, sd=sd, path=path: lib.save(sd, path)
            cases[(name, "load")] = lambda lib=lib, path=path: lib.load(path)
            cases[(name, "load mmap")] = lambda lib=lib, path=path: lib.load(path, mmap=True)
            if name == "ember":
                def nosync(lib=lib, sd=sd, path=path):
                    _io._sync = lambda fd: None
                    try:
                        lib.save(sd, path)
                    finally:
                        _io._sync = real_sync
                cases[(name, "save (no fsync)")] = nosync
        times = {k: [] for k in cases}
        for _ in range(rounds):
            for k, fn in cases.items():
                t = timeit.default_timer()
                fn()
                times[k].append(timeit.default_timer() - t)
    print(f"{total_mb} MB state_dict ({N_TENSORS} float32 tensors), file on disk, "
          f"{rounds} interleaved rounds, MB/s best / median")
    for (name, op), ts in times.items():
        best, med = total_mb / min(ts), total_mb / statistics.median(ts)
        print(f"  {name:6s} {op:16s} {best:8.0f} {med:8.0f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
