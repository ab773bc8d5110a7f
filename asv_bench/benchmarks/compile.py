"""``ember.compile`` (generated C) beside eager, and beside ``torch.compile``.

* ``Chain``: ``(x.sin() * 2 + x.cos()).relu() * x.sigmoid()`` on 4M float32.
* ``RowOps``: softmax and layer_norm over the rows of a 4096x4096 matrix.
* ``LinearEpilogue``: ``gelu(linear(x)) + x`` on 4096x512 (ember runs the gelu and
  the residual add as the GEMM's epilogue, on each block of the product).
* ``TrainStep``: a training step of an MLP and of a transformer block, the
  forward and loss compiled (generated forward and backward) or eager.

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


class LinearEpilogue:
    params = [["eager", "compiled"], LIBS]
    param_names = ["how", "library"]
    timer = WALL
    timeout = 300

    def setup(self, how, library):
        mod = need(library, "numpy")
        mod.manual_seed(0)
        self.x = asarray(library, randn((4096, 512)))
        lin = mod.nn.Linear(512, 512)
        F = mod.nn.functional
        self.grad = mod.no_grad()
        self.grad.__enter__()
        self.f = _prepare(mod, lambda t: F.gelu(lin(t)) + t, self.x, how)

    def teardown(self, how, library):
        self.grad.__exit__(None, None, None)

    def time_linear_gelu_residual(self, how, library):
        self.f(self.x)


def _train_setup(mod, model_kind, how):
    """A training step (zero_grad, forward, cross-entropy, backward, Adam step) with the
    forward and loss compiled or eager, or (``compiled_step``) the whole step compiled:
    the MLP of nn_training, and a transformer block (embedding 128, 4 heads, sequence
    64, batch 16)."""
    nn = mod.nn
    mod.manual_seed(0)
    if model_kind == "mlp":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))
        shape = (64, 784)

        def loss_fn(x, y):
            return nn.functional.cross_entropy(model(x), y)
    else:
        block = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0,
                                           batch_first=True)
        head = nn.Linear(128, 10)
        model = nn.ModuleList([block, head])
        shape = (16, 64, 128)

        def loss_fn(x, y):
            return nn.functional.cross_entropy(head(block(x).mean(1)), y)
    opt = mod.optim.Adam(model.parameters(), lr=1e-3)
    x = mod.randn(*shape)
    y = mod.randint(0, 10, (shape[0],))
    fn = mod.compile(loss_fn) if how == "compiled" else loss_fn

    def step():
        opt.zero_grad()
        fn(x, y).backward()
        opt.step()
    if how == "compiled_step":
        whole = mod.compile(step)

        def step():
            whole()
    for _ in range(3):
        step()
    return step


class TrainStep:
    params = [["mlp", "transformer"], ["eager", "compiled", "compiled_step"], LIBS]
    param_names = ["model", "how", "library"]
    timer = WALL
    timeout = 600

    def setup(self, model, how, library):
        self.step = _train_setup(need(library, "numpy"), model, how)

    def time_train_step(self, model, how, library):
        self.step()

    def peakmem_train_step(self, model, how, library):
        for _ in range(3):
            self.step()
