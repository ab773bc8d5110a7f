"""conv2d / pooling forward and forward+backward: ember beside PyTorch (NumPy has
no convolution, so it is skipped).  Kernels are threaded: wall-clock timer."""
import timeit

import numpy as np

# (32, 64, 64, 32): the ResNet block's convolution (Winograd F(4x4, 3x3) in ember)
CONVS = [(64, 1, 32, 28), (64, 32, 64, 14), (16, 64, 64, 56), (32, 128, 128, 7),
         (32, 64, 64, 32)]


def _need(library):
    if library == "numpy":
        raise NotImplementedError("numpy has no conv2d")
    if library == "torch":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise NotImplementedError("torch is not installed")


class Conv2d:
    """3x3, padding 1, batch x C_in -> C_out on HxW"""
    params = [CONVS, ["ember", "torch", "numpy"]]
    param_names = ["n_cin_cout_hw", "library"]
    timer = timeit.default_timer

    def setup(self, shape, library):
        _need(library)
        n, cin, cout, hw = shape
        rng = np.random.default_rng(0)
        x = rng.standard_normal((n, cin, hw, hw), dtype=np.float32)
        w = rng.standard_normal((cout, cin, 3, 3), dtype=np.float32)
        b = rng.standard_normal((cout,), dtype=np.float32)
        g = rng.standard_normal((n, cout, hw, hw), dtype=np.float32)
        if library == "torch":
            import torch
            F = torch.nn.functional
            tx, tw, tb, tg = (torch.from_numpy(a) for a in (x, w, b, g))
            txr, twr, tbr = (t.clone().requires_grad_() for t in (tx, tw, tb))
            self.fwd = lambda: F.conv2d(tx, tw, tb, padding=1)

            def fb():
                F.conv2d(txr, twr, tbr, padding=1).backward(tg)
            self.fwdbwd = fb
        else:
            import ember
            from ember._C import conv as L
            ex, ew, eb, eg = (ember.from_numpy(a) for a in (x, w, b, g))
            self.fwd = lambda: L.conv2d(ex, ew, eb, padding=1)

            def fb():
                L.conv2d(ex, ew, eb, padding=1)
                L.conv2d_input_grad(x.shape, ew, eg, 1, 1)
                L.conv2d_weight_grad(ex, w.shape, eg, 1, 1, bias_grad=True)
            self.fwdbwd = fb

    def time_forward(self, shape, library):
        self.fwd()

    def time_forward_backward(self, shape, library):
        self.fwdbwd()


class DepthwiseConv2d:
    params = [[(32, 64, 56), (64, 256, 14)], ["ember", "torch", "numpy"]]
    param_names = ["n_c_hw", "library"]
    timer = timeit.default_timer

    def setup(self, shape, library):
        _need(library)
        n, c, hw = shape
        rng = np.random.default_rng(0)
        x = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
        w = rng.standard_normal((c, 1, 3, 3), dtype=np.float32)
        if library == "torch":
            import torch
            tx, tw = torch.from_numpy(x), torch.from_numpy(w)
            self.fwd = lambda: torch.nn.functional.conv2d(tx, tw, padding=1, groups=c)
        else:
            import ember
            from ember._C import conv as L
            ex, ew = ember.from_numpy(x), ember.from_numpy(w)
            self.fwd = lambda: L.conv2d(ex, ew, padding=1, groups=c)

    def time_forward(self, shape, library):
        self.fwd()


class Pool2d:
    params = [["max", "avg", "adaptive_avg"], ["ember", "torch", "numpy"]]
    param_names = ["kind", "library"]
    timer = timeit.default_timer

    def setup(self, kind, library):
        _need(library)
        x = np.random.default_rng(0).standard_normal((64, 64, 56, 56), dtype=np.float32)
        if library == "torch":
            import torch
            F = torch.nn.functional
            t = torch.from_numpy(x)
            mod = F
        else:
            import ember
            from ember._C import conv as mod
            t = ember.from_numpy(x)
        if kind == "max":
            self.f = lambda: mod.max_pool2d(t, 3, 2, 1)
        elif kind == "avg":
            self.f = lambda: mod.avg_pool2d(t, 3, 2, 1)
        else:
            self.f = lambda: mod.adaptive_avg_pool2d(t, 1)

    def time_pool(self, kind, library):
        self.f()


class Unfold:
    """unfold (im2col) and fold (col2im), 3x3, padding 1: batch x C on HxW"""
    params = [[(64, 32, 14), (16, 64, 56)], ["unfold", "fold"], ["ember", "torch", "numpy"]]
    param_names = ["n_c_hw", "op", "library"]
    timer = timeit.default_timer

    def setup(self, shape, op, library):
        _need(library)
        n, c, hw = shape
        rng = np.random.default_rng(0)
        x = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
        cols = rng.standard_normal((n, c * 9, hw * hw), dtype=np.float32)
        if library == "torch":
            import torch
            mod = torch.nn.functional
            tx, tc = torch.from_numpy(x), torch.from_numpy(cols)
        else:
            import ember
            from ember._C import conv as mod
            tx, tc = ember.from_numpy(x), ember.from_numpy(cols)
        if op == "unfold":
            self.f = lambda: mod.unfold(tx, 3, padding=1)
        else:
            self.f = lambda: mod.fold(tc, hw, 3, padding=1)

    def time_op(self, shape, op, library):
        self.f()
