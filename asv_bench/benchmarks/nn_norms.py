"""Normalisation layers and class losses, forward + backward (a fixed random gradient),
ember beside PyTorch on one thread:

* ``Norms``: layer_norm and rms_norm on GPT activations (16x64x128); group_norm,
  batch_norm (train and eval) and instance_norm on a ResNet feature map (32x64x32x32).
* ``SegmentationLosses``: cross_entropy (ignore_index, label smoothing) and nll_loss of
  (8, 21, 64, 64) logits against (8, 64, 64) class indices.

``python tools/bench_models.py norms`` / ``losses`` print the ratios directly."""
from ._lib import LIBRARIES, asarray, need, randn, set_threads

LIBS = [lib for lib in LIBRARIES if lib != "numpy"]


def _norm(mod, name):
    F, nn = mod.nn.functional, mod.nn
    if name in ("layer_norm", "rms_norm"):
        w = mod.ones(128, requires_grad=True)
        if name == "layer_norm":
            return (16, 64, 128), lambda x: F.layer_norm(x, (128,), w, mod.zeros(128))
        return (16, 64, 128), lambda x: F.rms_norm(x, (128,), w)
    shape = (32, 64, 32, 32)
    if name == "group_norm":
        return shape, nn.GroupNorm(8, 64)
    if name == "instance_norm":
        return shape, nn.InstanceNorm2d(64, affine=True)
    return shape, nn.BatchNorm2d(64).train(name == "batch_norm_train")


class Norms:
    params = [["layer_norm", "rms_norm", "group_norm", "batch_norm_train", "batch_norm_eval",
               "instance_norm"], LIBS]
    param_names = ["op", "library"]
    timeout = 300

    def setup(self, op, library):
        mod = need(library, "numpy")
        self.old = set_threads(library, 1)
        shape, self.fn = _norm(mod, op)
        self.x = asarray(library, randn(shape)).requires_grad_()
        self.g = asarray(library, randn(shape, seed=1))

    def teardown(self, op, library):
        set_threads(library, self.old)

    def time_forward_backward(self, op, library):
        self.fn(self.x).backward(self.g)


class SegmentationLosses:
    params = [["cross_entropy", "nll_loss"], LIBS]
    param_names = ["loss", "library"]
    timeout = 300

    def setup(self, loss, library):
        mod = need(library, "numpy")
        self.old = set_threads(library, 1)
        self.x = asarray(library, randn((8, 21, 64, 64))).requires_grad_()
        t = mod.randint(0, 21, (8, 64, 64), generator=mod.Generator().manual_seed(0))
        t[:, :4] = 255
        F = mod.nn.functional
        kw = {"label_smoothing": 0.1} if loss == "cross_entropy" else {}
        self.fn = lambda: getattr(F, loss)(self.x, t, ignore_index=255, **kw)

    def teardown(self, loss, library):
        set_threads(library, self.old)

    def time_forward_backward(self, loss, library):
        self.fn().backward()
