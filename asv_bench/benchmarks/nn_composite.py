"""nn layers composed from other kernels (3-D convolution and pooling over the 2-D
kernels, the Transformer): ember beside PyTorch. NumPy has none of them (skipped).
Threaded: wall-clock timer."""
from ._lib import WALL, asarray, need, randn

CONV3D = [(4, 16, 32, 16, 32), (2, 32, 64, 8, 28)]     # N, C_in, C_out, D, H=W


class Conv3d:
    """3x3x3 convolution, padding 1: forward and forward+backward"""
    params = [CONV3D, ["ember", "torch", "numpy"]]
    param_names = ["n_cin_cout_d_hw", "library"]
    timer = WALL

    def setup(self, shape, library):
        mod = need(library, "numpy", reason="numpy has no conv3d")
        n, cin, cout, d, hw = shape
        x = asarray(library, randn((n, cin, d, hw, hw)))
        w = asarray(library, randn((cout, cin, 3, 3, 3), seed=1))
        F = mod.nn.functional
        self.fwd = lambda: F.conv3d(x, w, None, 1, 1)
        xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
        self.fwdbwd = lambda: F.conv3d(xr, wr, None, 1, 1).sum().backward()

    def time_forward(self, shape, library):
        self.fwd()

    def time_forward_backward(self, shape, library):
        self.fwdbwd()


class ConvTranspose3d:
    """3x3x3 transposed convolution, stride 2, padding 1"""
    params = [CONV3D, ["ember", "torch", "numpy"]]
    param_names = ["n_cin_cout_d_hw", "library"]
    timer = WALL

    def setup(self, shape, library):
        mod = need(library, "numpy", reason="numpy has no conv_transpose3d")
        n, cin, cout, d, hw = shape
        self.x = asarray(library, randn((n, cin, d, hw, hw)))
        self.w = asarray(library, randn((cin, cout, 3, 3, 3), seed=1))
        self.F = mod.nn.functional

    def time_forward(self, shape, library):
        self.F.conv_transpose3d(self.x, self.w, None, 2, 1, 1)


class Pool3d:
    """max_pool3d (k=2 and k=3/s=2/p=1) and avg_pool3d (k=2) forward"""
    params = [[(4, 16, 16, 32), (2, 32, 8, 28)], ["ember", "torch", "numpy"]]
    param_names = ["n_c_d_hw", "library"]
    timer = WALL

    def setup(self, shape, library):
        mod = need(library, "numpy", reason="numpy has no pooling")
        n, c, d, hw = shape
        self.x = asarray(library, randn((n, c, d, hw, hw)))
        self.F = mod.nn.functional

    def time_max_pool3d_k2(self, shape, library):
        self.F.max_pool3d(self.x, 2)

    def time_max_pool3d_k3s2p1(self, shape, library):
        self.F.max_pool3d(self.x, 3, 2, 1)

    def time_avg_pool3d_k2(self, shape, library):
        self.F.avg_pool3d(self.x, 2)


class TransformerForward:
    """nn.Transformer(d_model=128, nhead=4, 2+2 layers), batch 8, src 64 / tgt 32, eval"""
    params = [["ember", "torch", "numpy"]]
    param_names = ["library"]
    timer = WALL

    def setup(self, library):
        mod = need(library, "numpy", reason="numpy has no Transformer")
        mod.manual_seed(0)
        self.m = mod.nn.Transformer(128, 4, 2, 2, 256, dropout=0.0, batch_first=True).eval()
        self.src = asarray(library, randn((8, 64, 128)))
        self.tgt = asarray(library, randn((8, 32, 128), seed=1))
        self.mask = mod.nn.Transformer.generate_square_subsequent_mask(32)
        self.no_grad = mod.no_grad

    def time_forward(self, library):
        with self.no_grad():
            self.m(self.src, self.tgt, tgt_mask=self.mask)
