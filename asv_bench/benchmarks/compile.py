"""``ember.compile`` (generated C) beside eager, and beside ``torch.compile``.

* ``Chain``: ``(x.sin() * 2 + x.cos()).relu() * x.sigmoid()`` on 4M float32.
* ``RowOps``: softmax and layer_norm over the rows of a 4096x4096 matrix.

``compiled`` rows compile in ``setup`` (capture, code generation, and for torch
Inductor's build), so the timed call is the steady state.
"""

from ._lib import LIBRARIES, WALL, asarray, need, randn

LIBS = [lib for lib in LIBRARIES if lib != "numpy"]


def _chain(x):
    return (x.sin() * 2 + x.cos()).relu() * x.sigmoid()


def _prepare(mod, fn, x, how):
    if how == "eager":
        return fn
    f = mod.compile(fn)
    f(x)
    f(x)
    return f


class Chain:
    params = [["eager", "compiled"], LIBS]
    param_names = ["how", "library"]
    timer = WALL
    timeout = 300

    def setup(self, how, library):
        mod = need(library, "numpy")
        self.x = asarray(library, randn(4 * 1024 * 1024))
        self.f = _prepare(mod, _chain, self.x, how)

    def time_chain(self, how, library):
        self.f(self.x)


class RowOps:
    params = [["softmax", "layer_norm"], ["eager", "compiled"], LIBS]
    param_names = ["op", "how", "library"]
    timer = WALL
    timeout = 300

    def setup(self, op, how, library):
        mod = need(library, "numpy")
        self.x = asarray(library, randn((4096, 4096)))
        F = mod.nn.functional
        fn = ((lambda t: t.softmax(-1)) if op == "softmax"
              else (lambda t: F.layer_norm(t, (t.shape[-1],))))
        self.f = _prepare(mod, fn, self.x, how)

    def time_row_op(self, op, how, library):
        self.f(self.x)
