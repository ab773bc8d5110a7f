"""Autograd overhead: graph recording and backward on small tensors, where the
engine's Python cost is what is measured, and one larger chain where kernels
dominate.  ember beside PyTorch (NumPy has no autograd).

* ``TrainStep``: issue 4's yardstick, record + backward of a 10-element
  ``((w * x + b).sum()).backward()`` (target: at most 0.5x PyTorch's time).
* ``AddOverhead``: ``a + b`` with inputs that require grad (target: at most 1.5x
  PyTorch's), and the same add without grad (must not slow down).
* ``ChainBackward`` / ``LargeChainBackward``: 20 recorded ops, 16 and 1M elements.
* ``Grad``, ``DoubleBackward``: ``autograd.grad`` and a Hessian-vector product.
"""

from ._lib import WALL, asarray, load, randn

LIBS = ["ember", "torch"]


class _Graph:
    params = [LIBS]
    param_names = ["library"]
    n = 16

    def setup(self, library):
        mod = load(library)           # NotImplementedError (skip) when missing
        self.mod = mod
        self.x = asarray(library, randn(self.n)).requires_grad_()
        self.w = asarray(library, randn(self.n, seed=1)).requires_grad_()


class TrainStep:
    """record + backward of ``((w * x + b).sum()).backward()`` on 10 elements."""

    params = [LIBS]
    param_names = ["library"]

    def setup(self, library):
        mod = load(library)
        self.w = mod.ones(10, requires_grad=True)
        self.x = mod.ones(10)
        self.b = mod.ones(10, requires_grad=True)

    def time_record_backward(self, library):
        ((self.w * self.x + self.b).sum()).backward()

    def time_record_only(self, library):
        (self.w * self.x + self.b).sum()


class AddOverhead:
    """Per-op cost of ``a + b`` (10 elements) with and without grad-requiring inputs."""

    params = [LIBS, ["requires_grad", "no_grad_inputs"]]
    param_names = ["library", "inputs"]

    def setup(self, library, inputs):
        mod = load(library)
        rg = inputs == "requires_grad"
        self.a = mod.ones(10, requires_grad=rg)
        self.b = mod.ones(10, requires_grad=rg)

    def time_add(self, library, inputs):
        self.a + self.b


class ChainBackward(_Graph):
    """20 elementwise ops recorded, then ``backward`` (16 elements)."""

    def _forward(self):
        y = self.x
        for _ in range(5):
            y = (y * self.w + 1.0).tanh() - y.sigmoid()
        return y.sum()

    def time_forward_only_no_grad(self, library):
        with self.mod.no_grad():
            self._forward()

    def time_forward_recorded(self, library):
        self._forward()

    def time_forward_backward(self, library):
        self._forward().backward()


class Grad(_Graph):
    """``autograd.grad`` of a small expression."""

    def time_autograd_grad(self, library):
        y = (self.x * self.w).exp().sum()
        self.mod.autograd.grad(y, [self.x, self.w])


class DoubleBackward(_Graph):
    """Hessian-vector product through ``create_graph=True``."""

    def time_hvp(self, library):
        y = (self.x * self.x * self.w).tanh().sum()
        (g,) = self.mod.autograd.grad(y, self.x, create_graph=True)
        self.mod.autograd.grad((g * self.w).sum(), self.x)


class LargeChainBackward(ChainBackward):
    """The same chain on 1M elements: kernels, not bookkeeping, dominate."""

    n = 1 << 20
    timer = WALL
