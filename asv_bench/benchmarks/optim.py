"""Optimizer steps and gradient clipping on a GPT-sized parameter set (30 tensors, about
1M float32 parameters: 128-wide matrices and vectors): ember beside PyTorch with each
library's default step (ember: one multi-tensor C call per group). Wall-clock timer."""

from ._lib import WALL, load, need, randn

SHAPES = [(128,) if i % 3 == 2 else (390, 128) for i in range(30)]


def _params(lib):
    ps = []
    for i, s in enumerate(SHAPES):
        p = lib.nn.Parameter(lib.from_numpy(randn(s, seed=i) * 0.02))
        p.grad = lib.from_numpy(randn(s, seed=100 + i) * 1e-3)
        ps.append(p)
    return ps


class OptimizerStep:
    params = [["AdamW", "Adam-amsgrad", "SGD-nesterov"], ["ember", "torch"]]
    param_names = ["optimizer", "library"]
    timer = WALL

    def setup(self, optimizer, library):
        lib = need(library, "numpy")
        ps = _params(lib)
        if optimizer == "AdamW":
            self.opt = lib.optim.AdamW(ps, lr=1e-3)
        elif optimizer == "Adam-amsgrad":
            self.opt = lib.optim.Adam(ps, lr=1e-3, amsgrad=True)
        else:
            self.opt = lib.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)
        self.opt.step()

    def time_step(self, optimizer, library):
        self.opt.step()


class ClipGradNorm:
    params = [[2.0, float("inf")], ["ember", "torch"]]
    param_names = ["norm_type", "library"]
    timer = WALL

    def setup(self, norm_type, library):
        self.lib = load(library)
        self.ps = _params(self.lib)

    def time_clip_grad_norm(self, norm_type, library):
        self.lib.nn.utils.clip_grad_norm_(self.ps, 1e9, norm_type=norm_type)
