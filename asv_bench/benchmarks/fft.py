"""``fft``: batched 1-D complex FFT, 2-D complex FFT and a long real FFT, ember's C
kernels beside PyTorch and NumPy (both pocketfft) on the same data and thread count."""

import numpy as np

from ._lib import WALL, asarray, load, need_threads, randn, set_threads


class Transforms:
    params = [["fft_4096x256", "fft2_512", "rfft_1M"], ["ember", "torch", "numpy"], [1, 2]]
    param_names = ["case", "library", "threads"]
    timer = WALL

    def setup(self, case, library, threads):
        need_threads(threads)
        mod = load(library)
        set_threads(library, threads)
        if case == "rfft_1M":
            x = asarray(library, randn((1 << 20,)))
            self.fn = lambda: mod.fft.rfft(x)
            return
        shape = (256, 4096) if case == "fft_4096x256" else (512, 512)
        c = (randn(shape) + 1j * randn(shape, seed=1)).astype(np.complex64)
        x = asarray(library, c)
        self.fn = (lambda: mod.fft.fft(x)) if case == "fft_4096x256" else \
            (lambda: mod.fft.fft2(x))
        self.fn()      # plans are built on first use

    def time_transform(self, case, library, threads):
        self.fn()
