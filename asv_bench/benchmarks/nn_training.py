"""Training steps (forward + backward + optimizer step, batch 64, synthetic data, steady
state): ember beside PyTorch through the same code, ``lib.nn`` / ``lib.optim``.

- MLP 784-256-256-10 with Adam (PyTorch: about 2.2 ms per step on the 2-core box)
- LeNet-like CNN (conv 1->32 3x3 pad 1, relu, maxpool, conv 32->64 3x3, relu, maxpool,
  linear 1600->128, relu, linear ->10) on 1x26x26 inputs with SGD momentum
- ResNet basic block (conv3x3-bn-relu twice, identity shortcut, 64 channels, 32x32,
  batch 32) with SGD momentum
- LSTM (input 64, hidden 128, seq 32, batch 32) forward + backward
- GPT-style model (4 pre-norm blocks: LayerNorm, one QKV Linear, causal
  scaled_dot_product_attention, GELU MLP; embedding 128, 4 heads, sequence 64, batch 16)
  with AdamW and cross-entropy over a 256-token vocabulary

Run directly (``python asv_bench/benchmarks/nn_training.py``) for a ratio table."""
import timeit

import numpy as np


def _lib(library):
    if library == "torch":
        try:
            import torch
        except ImportError:
            raise NotImplementedError("torch is not installed")
        return torch
    import ember
    return ember


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))


def _copy(src, dst, lib_dst):
    """Same initial weights in both libraries (from the torch model when both exist)."""
    sd = {k: lib_dst.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(sd)


class _StepBench:
    params = [["ember", "torch"]]
    param_names = ["library"]
    timer = timeit.default_timer
    warmup_time = 0.5

    def _build(self, lib):
        raise NotImplementedError

    def setup(self, library):
        lib = _lib(library)
        rng = np.random.default_rng(0)
        self.model, self.opt, x_shape = self._build(lib)
        x = rng.standard_normal(x_shape, dtype=np.float32)
        y = rng.integers(0, 10, size=(x_shape[0],)).astype(np.int64)
        self.x, self.y = lib.from_numpy(x), lib.from_numpy(y)
        self.loss_fn = lib.nn.CrossEntropyLoss()
        for _ in range(3):
            self.step()

    def step(self):
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()

    def time_train_step(self, library):
        self.step()

    def peakmem_train_step(self, library):
        for _ in range(3):
            self.step()


class MLPAdam(_StepBench):
    """MLP 784-256-256-10, Adam, batch 64"""

    def _build(self, lib):
        m = _mlp(lib)
        return m, lib.optim.Adam(m.parameters(), lr=1e-3), (64, 784)


class CNNSGDMomentum(_StepBench):
    """LeNet-like CNN, SGD momentum 0.9, batch 64 of 1x26x26 images (26 -> conv pad 1 ->
    26 -> pool 13 -> conv 11 -> pool 5: the 64x5x5 = 1600 features the spec names)"""

    def _build(self, lib):
        m = _cnn(lib)
        return m, lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), (64, 1, 26, 26)


def _resnet_block(lib):
    """conv3x3-bn-relu-conv3x3-bn + identity, relu (64 channels, no conv bias), then global
    average pooling and a linear head to 10 classes"""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, c=64):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            h = self.bn1(self.conv1(x)).relu()
            return (self.bn2(self.conv2(h)) + x).relu()
    return nn.Sequential(Block(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


class ResNetBlockSGD(_StepBench):
    """ResNet basic block (3x3 conv + batch_norm + relu twice, identity shortcut, 64 channels)
    on batch 32 of 64x32x32 feature maps, global pooling + linear head, SGD momentum 0.9"""

    def _build(self, lib):
        m = _resnet_block(lib)
        return m, lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), (32, 64, 32, 32)


def _gpt(lib, vocab=256, emb=128, heads=4, seq=64, layers=4):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(emb), nn.LayerNorm(emb)
            self.qkv, self.proj = nn.Linear(emb, 3 * emb), nn.Linear(emb, emb)
            self.fc1, self.fc2 = nn.Linear(emb, 4 * emb), nn.Linear(4 * emb, emb)

        def forward(self, x):
            B, L, E = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(E, -1)
            q, k, v = (t.reshape(B, L, heads, E // heads).transpose(1, 2) for t in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, L, E))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, emb), nn.Embedding(seq, emb)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(emb), nn.Linear(emb, vocab)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1]))
            return self.head(self.ln(self.blocks(x)))
    return GPT()


class GPTAdamW(_StepBench):
    """GPT-style model, 4 blocks (embedding 128, 4 heads, sequence 64), batch 16, AdamW"""

    def setup(self, library):
        lib = _lib(library)
        lib.manual_seed(0)
        self.model = _gpt(lib)
        self.opt = lib.optim.AdamW(self.model.parameters(), lr=1e-3)
        rng = np.random.default_rng(0)
        self.idx = lib.from_numpy(rng.integers(0, 256, size=(16, 64)).astype(np.int64))
        self.tgt = lib.from_numpy(rng.integers(0, 256, size=(16 * 64,)).astype(np.int64))
        self.ce = lib.nn.functional.cross_entropy
        for _ in range(3):
            self.step()

    def step(self):
        self.opt.zero_grad()
        self.ce(self.model(self.idx).reshape(-1, 256), self.tgt).backward()
        self.opt.step()


class LSTMForwardBackward:
    """LSTM input 64, hidden 128, seq 32, batch 32: forward + backward"""
    params = [["ember", "torch"]]
    param_names = ["library"]
    timer = timeit.default_timer

    def setup(self, library):
        lib = _lib(library)
        rng = np.random.default_rng(0)
        self.lstm = lib.nn.LSTM(64, 128)
        self.x = lib.from_numpy(rng.standard_normal((32, 32, 64), dtype=np.float32))
        self.x.requires_grad_(True)
        for _ in range(2):
            self.run()

    def run(self):
        out, (h, c) = self.lstm(self.x)
        out.sum().backward()

    def time_forward_backward(self, library):
        self.run()


def _measure(cls, library, repeat=7, number=None):
    b = cls()
    b.setup(library)
    fn = b.step if hasattr(b, "step") else b.run
    t = timeit.Timer(fn)
    if number is None:
        n, _ = t.autorange()
        number = max(1, n)
    return min(t.repeat(repeat, number)) / number


if __name__ == "__main__":
    rows = []
    for cls in (MLPAdam, CNNSGDMomentum, ResNetBlockSGD, GPTAdamW, LSTMForwardBackward):
        times = {}
        for library in ("torch", "ember"):
            try:
                times[library] = _measure(cls, library)
            except NotImplementedError:
                pass
        r = times.get("ember", float("nan")) / times.get("torch", float("nan"))
        print(f"{cls.__name__:22s} torch {1e3 * times.get('torch', float('nan')):8.3f} ms   "
              f"ember {1e3 * times.get('ember', float('nan')):8.3f} ms   ratio {r:.2f}x",
              flush=True)
