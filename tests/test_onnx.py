"""ember.onnx.export: the file passes onnx.checker and onnxruntime reproduces ember's outputs."""

import io
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _export(model, x, **kw):
    model.eval()
    buf = io.BytesIO()
    ember.onnx.export(model, (x,), buf, input_names=["x"], output_names=["y"], **kw)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    return proto, sess


def _assert_same(model, sess, x):
    (got,) = sess.run(["y"], {"x": x.numpy()})
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_mlp_matches_and_weights_are_initializers():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Dropout(0.2), nn.Linear(8, 8),
                          nn.Tanh(), nn.Linear(8, 3), nn.LogSoftmax(-1))
    x = ember.randn(2, 4)
    proto, sess = _export(model, x)
    assert {i.name for i in proto.graph.initializer} >= {"0.weight", "0.bias", "5.weight"}
    assert [i.name for i in proto.graph.input] == ["x"]
    assert [o.name for o in proto.graph.output] == ["y"]
    assert proto.opset_import[0].version == 17
    _assert_same(model, sess, x)


def test_cnn_matches_with_dynamic_batch():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 6, 3, stride=1), nn.Sigmoid(), nn.Flatten(),
                          nn.Linear(6 * 2 * 2, 5), nn.Softmax(dim=1))
    x = ember.randn(2, 1, 8, 8)
    proto, sess = _export(model, x, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    _assert_same(model, sess, x)
    _assert_same(model, sess, ember.randn(5, 1, 8, 8))


def test_transformer_encoder_layer_matches_with_dynamic_batch():
    ember.manual_seed(0)
    model = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
    x = ember.randn(3, 5, 16)
    _, sess = _export(model, x, dynamic_axes={"x": [0]})
    _assert_same(model, sess, x)
    _assert_same(model, sess, ember.randn(7, 5, 16))


def test_transformer_dynamic_batch_and_sequence():
    ember.manual_seed(0)
    model = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, activation="gelu",
                                       norm_first=True)          # (seq, batch, feature)
    x = ember.randn(5, 3, 16)
    proto, sess = _export(model, x, dynamic_axes={"x": {0: "seq", 1: "batch"}})
    dims = proto.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["seq", "batch", 16]
    for shape in [(5, 3, 16), (9, 2, 16), (1, 1, 16)]:
        _assert_same(model, sess, ember.randn(*shape))


def test_views_slicing_cat_and_embedding():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 6)

        def forward(self, idx):
            e = self.emb(idx)                                   # (B, 4, 6)
            a = e.permute(0, 2, 1).unsqueeze(1).squeeze(1)      # (B, 6, 4)
            b = ember.cat([a[:, :3], a[:, 3:] * 2.0 - 1.0], dim=1) / 3.0
            return b.reshape(b.shape[0], -1)[:, 1:].unsqueeze(-1).expand(-1, -1, 2)

    ember.manual_seed(0)
    model = Net()
    idx = ember.tensor([[1, 2, 3, 4], [5, 6, 7, 9]])
    _, sess = _export(model, idx, dynamic_axes={"x": [0]})
    for x in (idx, ember.tensor([[0, 1, 2, 3], [9, 8, 7, 6], [4, 4, 4, 4]])):
        _assert_same(model, sess, x)


def test_file_path_and_unmapped_op(tmp_path):
    model = nn.Linear(3, 2)
    path = tmp_path / "m.onnx"
    ember.onnx.export(model, ember.randn(1, 3), str(path))
    onnx.checker.check_model(onnx.load(str(path)))

    class Cumsum(nn.Module):
        def forward(self, x):
            return x.cumsum(0)

    with pytest.raises(RuntimeError, match="cumsum.*no ONNX mapping"):
        ember.onnx.export(Cumsum(), ember.randn(3), io.BytesIO())

    # captured in eval mode (torch's default), the training flag restored afterwards
    drop = nn.Sequential(nn.Dropout(0.5), nn.ReLU()).train()
    buf = io.BytesIO()
    ember.onnx.export(drop, ember.randn(3), buf, input_names=["x"], output_names=["y"])
    assert drop.training and drop[0].training
    x = ember.randn(3)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(["y"], {"x": x.numpy()})[0], ember.relu(x).numpy())


def test_missing_onnx_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install ember\[onnx\]"):
        ember.onnx.export(nn.Linear(2, 2), ember.randn(1, 2), io.BytesIO())


@pytest.mark.parametrize("opset", [17, 18])
def test_batchnorm_pooling_reductions_and_attention(opset):
    import ember.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding="same")
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(4, 8)

        def forward(self, x):
            self.seen_export = ember.onnx.is_in_onnx_export()
            h = self.bn(self.conv(x))
            y = self.pool(F.silu(h)).flatten(1) + F.avg_pool2d(h, 2).mean(dim=(2, 3))
            q = self.fc(y).reshape(y.shape[0], 2, 4)            # (B, 2 tokens, 4)
            a = F.scaled_dot_product_attention(q, q, q)
            a = ember.where(a > 0, a.pow(2), -(a * a + 1.0).rsqrt().abs())
            return a.sum(-1) - a.amax(dim=-1, keepdim=True).squeeze(-1)

    ember.manual_seed(0)
    model = Net()
    model.bn.running_mean.copy_(ember.randn(4))
    model.bn.running_var.copy_(ember.rand(4) + 0.5)
    x = ember.randn(2, 3, 6, 6)
    proto, sess = _export(model, x, dynamic_axes={"x": [0]}, opset_version=opset)
    assert proto.opset_import[0].version == opset
    assert "bn.running_mean" in {i.name for i in proto.graph.initializer}
    _assert_same(model, sess, x)
    _assert_same(model, sess, ember.randn(4, 3, 6, 6))
    assert not ember.onnx.is_in_onnx_export()
    proto, sess = _export(model, x, dynamic_axes={"x": [0]}, opset_version=opset)
    assert model.seen_export
    model(x)
    assert not model.seen_export


def test_bad_arguments():
    with pytest.raises(ValueError, match="opset_version"):
        ember.onnx.export(nn.ReLU(), ember.randn(2), io.BytesIO(), opset_version=11)
    with pytest.raises(ValueError, match="input_names"):
        ember.onnx.export(nn.ReLU(), ember.randn(2), io.BytesIO(), input_names=["a", "b"])


def test_buffers_constants_and_several_inputs_and_outputs():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", ember.tensor([2.0, 3.0]))
            self.shift = ember.tensor([1.0, -1.0])

        def forward(self, x, y):
            return (x * self.scale + self.shift + ember.tensor([0.5, 0.25]),
                    y[..., None, 0] - x.t()[0])

    x, y = ember.randn(3, 2), ember.randn(4, 2)
    buf = io.BytesIO()
    ember.onnx.export(Net(), (x, y), buf, output_names=["a"])
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["x", "y"]
    assert [o.name for o in sess.get_outputs()] == ["a", "output_1"]
    got = sess.run(None, {"x": x.numpy(), "y": y.numpy()})
    for g, e in zip(got, Net()(x, y)):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-6)


# ---- sizes computed from dynamic axes -------------------------------------------------

def _run_sizes(model, x, sizes, axes, **kw):
    """Export with ``axes`` dynamic and compare onnxruntime with ember at each shape."""
    proto, sess = _export(model, x, dynamic_axes={"x": axes}, **kw)
    for shape in sizes:
        _assert_same(model, sess, ember.randn(*shape))
    return proto


class _Heads(nn.Module):
    """Sizes read from the input: view(x.size(0), ...), shape arithmetic, a reshape
    splitting batch*heads, factories and arange sized by the sequence."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        b, s = x.size(0), x.shape[1]
        h = self.proj(x).view(b * 2, s, 4)                  # merge batch and heads
        h = h.reshape(b, 2, s, 4).transpose(1, 2)           # split them again
        h = h.reshape(x.size(0), -1)
        pos = ember.arange(s).float().repeat(4 * 2)         # (s * 8,)
        bias = (ember.zeros(b, 1) + s).expand(b, s * 8)     # expand to computed sizes
        return h + pos.unsqueeze(0) * (x.shape[1] - 1) + bias + x[:, : s - 1].mean()


def test_sizes_computed_from_dynamic_axes_follow_the_input():
    ember.manual_seed(0)
    model = _Heads()
    proto = _run_sizes(model, ember.randn(3, 5, 8), [(3, 5, 8), (6, 2, 8), (1, 7, 8)],
                       {0: "batch", 1: "seq"})
    ops = {n.op_type for n in proto.graph.node}
    assert "Shape" in ops and "Range" in ops and "ConstantOfShape" in ops
    dims = [d.dim_param or d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "8*seq"]


def test_view_of_size_zero_and_flatten_in_a_cnn_with_dynamic_batch():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 3, 3, padding=1)
            self.fc = nn.Linear(3 * 4 * 4, 2)

        def forward(self, x):
            h = self.conv(x).relu()
            return self.fc(h.view(h.size(0), -1))

    ember.manual_seed(0)
    _run_sizes(Net(), ember.randn(2, 2, 4, 4), [(2, 2, 4, 4), (5, 2, 4, 4)], {0: "n"})


def test_conv3d_and_transposed_convolutions():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv3d(2, 3, 3, padding=1), nn.ReLU(),
                          nn.ConvTranspose3d(3, 2, 2, stride=2))
    _run_sizes(model, ember.randn(2, 2, 3, 4, 4), [(2, 2, 3, 4, 4), (3, 2, 3, 4, 4)], [0])
    model = nn.Sequential(nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, output_padding=1,
                                             groups=2), nn.Tanh(),
                          nn.ConvTranspose2d(4, 1, (2, 3), dilation=2))
    _run_sizes(model, ember.randn(2, 2, 5, 6), [(2, 2, 5, 6), (4, 2, 5, 6)], [0])
    model = nn.ConvTranspose1d(3, 2, 4, stride=3, padding=2)
    _run_sizes(model, ember.randn(2, 3, 7), [(2, 3, 7), (1, 3, 7)], [0])


class _Attn(nn.Module):
    def __init__(self, causal, masked):
        super().__init__()
        self.causal, self.masked = causal, masked
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, 2, 4).permute(2, 0, 3, 1, 4)
        mask = None
        if self.masked:     # a float mask built from the sequence length
            mask = ember.arange(s).float().view(1, s) * -0.1
        out = ember.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=self.causal)
        return out.transpose(1, 2).reshape(b, s, 8)


@pytest.mark.parametrize("causal,masked", [(True, False), (False, True)])
def test_attention_causal_and_masked_with_dynamic_sequence(causal, masked):
    ember.manual_seed(0)
    _run_sizes(_Attn(causal, masked), ember.randn(2, 5, 8),
               [(2, 5, 8), (3, 9, 8), (1, 1, 8)], {0: "batch", 1: "seq"})


def test_sizes_that_cannot_follow_a_dynamic_axis_are_refused():
    class Branch(nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] > 3 else x

    class FloatOfSize(nn.Module):
        def forward(self, x):
            return x / math.sqrt(x.shape[1])

    class Rounding(nn.Module):
        def forward(self, x):
            return x.new_zeros(1).expand((x.shape[0] + 1) // 2)

    import math
    with pytest.raises(RuntimeError, match="graph changes with the size of dynamic axis 'b'"):
        _export(Branch(), ember.randn(2, 3), dynamic_axes={"x": {0: "b"}})
    with pytest.raises(RuntimeError, match="depends on a dynamic axis but is not an int"):
        _export(FloatOfSize(), ember.randn(2, 4), dynamic_axes={"x": {1: "s"}})
    with pytest.raises(RuntimeError, match="rounding division"):
        _export(Rounding(), ember.randn(4, 3), dynamic_axes={"x": {0: "b"}})


def test_fused_causal_attention_kernel_exports():
    class Fused(nn.Module):
        def forward(self, x):       # 256 x 256 scores: ember runs its fused kernel
            return ember.nn.functional.scaled_dot_product_attention(x, x * 0.5, x,
                                                                    is_causal=True)

    _run_sizes(Fused(), ember.randn(1, 256, 4), [(1, 256, 4), (3, 256, 4)], {0: "batch"})


def test_fills_shaped_like_the_input_or_by_computed_sizes():
    class Fills(nn.Module):
        def forward(self, x):
            b, s = x.shape
            z = x.new_zeros(b, s * 2) + x.new_full((1, s * 2), 0.5)
            o = ember.ones_like(x) * 3 + ember.full_like(x, 2.0) - ember.zeros_like(x)
            return z + ember.cat([o, x], 1)

    _run_sizes(Fills(), ember.randn(2, 3), [(2, 3), (5, 4), (1, 1)], {0: "b", 1: "s"})


def test_sizes_traced_below_the_example_when_larger_ones_are_refused():
    class Positions(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = nn.Embedding(8, 4)       # at most 8 positions: 2x the example fails

        def forward(self, x):
            return x + self.pos(ember.arange(x.shape[1])).unsqueeze(0)

    ember.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proto = _run_sizes(Positions(), ember.randn(2, 6, 4), [(2, 6, 4), (3, 2, 4), (1, 8, 4)],
                           {0: "batch", 1: "seq"})
    assert "Range" in {n.op_type for n in proto.graph.node}
