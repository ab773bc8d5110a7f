"""scaled_dot_product_attention at sequence 1024 (batch 4, 8 heads, head dim 64,
float32): forward, forward+backward and the peak memory of forward+backward, full
and causal, ember beside PyTorch (ember runs its flash-attention style kernel:
blocked, online softmax, no L x L matrix).

``tools/bench_models.py sdpa`` times the two alternately and measures peak RSS in
separate processes."""
import numpy as np

from ._lib import WALL, load

SHAPE = (4, 8, 1024, 64)


class SDPA:
    params = [[False, True], ["ember", "torch"]]
    param_names = ["is_causal", "library"]
    timer = WALL

    def setup(self, is_causal, library):
        lib = load(library)
        rng = np.random.default_rng(0)
        self.lib = lib
        self.q, self.k, self.v = (lib.from_numpy(rng.standard_normal(SHAPE, dtype=np.float32))
                                  .requires_grad_(True) for _ in range(3))
        self.g = lib.from_numpy(rng.standard_normal(SHAPE, dtype=np.float32))
        self.sdpa = lib.nn.functional.scaled_dot_product_attention
        self.causal = is_causal

    def _fwd_bwd(self):
        self.sdpa(self.q, self.k, self.v, is_causal=self.causal).backward(self.g)
        self.q.grad = self.k.grad = self.v.grad = None

    def time_forward(self, is_causal, library):
        with self.lib.no_grad():
            self.sdpa(self.q, self.k, self.v, is_causal=is_causal)

    def time_forward_backward(self, is_causal, library):
        self._fwd_bwd()

    def peakmem_forward_backward(self, is_causal, library):
        self._fwd_bwd()

