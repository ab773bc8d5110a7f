"""nn.Module semantics: registration, iteration, state_dict, modes, hooks, repr."""
import copy
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.block = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
        self.scale = nn.Parameter(ember.ones(1))
        self.register_buffer("steps", ember.zeros(1))
        self.register_buffer("cache", ember.zeros(2), persistent=False)

    def forward(self, x):
        return self.block(self.act(self.fc1(x))) * self.scale


def test_parameter_is_tensor_subclass_sharing_storage():
    t = ember.ones(2, 3)
    p = nn.Parameter(t)
    assert type(p) is nn.Parameter
    assert isinstance(p, ember.Tensor)
    assert p.requires_grad and p.is_leaf
    assert p.data_ptr() == t.data_ptr()
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")
    q = p * 2
    assert type(q) is ember.Tensor
    d = copy.deepcopy(p)
    assert type(d) is nn.Parameter and d.data_ptr() != p.data_ptr()
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.requires_grad
    np.testing.assert_array_equal(r.detach().numpy(), p.detach().numpy())


def test_registration_and_iteration():
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias",
                     "block.1.weight", "block.1.bias"]
    assert len(list(m.parameters())) == 7
    assert [n for n, _ in m.named_buffers()] == [
        "steps", "cache", "block.1.running_mean", "block.1.running_var",
        "block.1.num_batches_tracked"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "block"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "block", "block.0",
                                                 "block.1"]
    assert len(list(m.modules())) == 6
    assert m.get_submodule("block.0") is m.block[0]
    assert m.get_parameter("block.0.bias") is m.block[0].bias
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    # shared modules and parameters are listed once
    s = nn.Sequential(m.fc1, m.fc1)
    assert len(list(s.parameters())) == 2
    assert len(list(s.named_modules(remove_duplicate=False))) == 3


def test_setattr_rules():
    m = Net()
    with pytest.raises(TypeError):
        m.fc1 = ember.ones(2)  # a module slot needs a Module or None
    with pytest.raises(TypeError):
        m.scale = ember.ones(1)  # a parameter slot needs a Parameter or None
    m.scale = None
    assert "scale" in m._parameters and m.scale is None
    m.steps = ember.ones(1)
    assert "steps" in m._buffers
    m.plain = 3
    assert m.plain == 3 and "plain" not in m._parameters
    del m.fc1
    assert not hasattr(m, "fc1")
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        m.nope
    with pytest.raises(KeyError):
        m.register_buffer("a.b", ember.zeros(1))
    with pytest.raises(AttributeError):
        class Bad(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(ember.ones(1))
        Bad()


def test_state_dict_and_load():
    m = Net()
    sd = m.state_dict()
    assert list(sd.keys()) == ["scale", "steps", "fc1.weight", "fc1.bias", "block.0.weight",
                               "block.0.bias", "block.1.weight", "block.1.bias",
                               "block.1.running_mean", "block.1.running_var",
                               "block.1.num_batches_tracked"]
    assert "cache" not in sd
    assert not sd["fc1.weight"].requires_grad
    assert sd["fc1.weight"].data_ptr() == m.fc1.weight.data_ptr()
    assert m.state_dict(keep_vars=True)["fc1.weight"] is m.fc1.weight
    m2 = Net()
    r = m2.load_state_dict(sd)
    assert r.missing_keys == [] and r.unexpected_keys == []
    assert repr(r) == "<All keys matched successfully>"
    np.testing.assert_array_equal(m2.fc1.weight.detach().numpy(), m.fc1.weight.detach().numpy())
    assert m2.fc1.weight.data_ptr() != m.fc1.weight.data_ptr()
    # strict: missing / unexpected keys are errors that name them
    bad = dict(sd)
    del bad["fc1.bias"]
    bad["extra.weight"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as ei:
        m2.load_state_dict(bad)
    msg = str(ei.value)
    assert 'Missing key(s) in state_dict: "fc1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    r = m2.load_state_dict(bad, strict=False)
    assert r.missing_keys == ["fc1.bias"] and r.unexpected_keys == ["extra.weight"]
    # shape mismatch is always an error
    bad = dict(sd)
    bad["fc1.weight"] = ember.zeros(2, 2)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight"):
        m2.load_state_dict(bad, strict=False)


def test_train_eval_requires_grad_zero_grad_apply():
    m = Net()
    assert m.training and m.block[1].training
    m.eval()
    assert not m.training and not m.block[1].training
    m.train()
    assert m.block[0].training
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_(True)
    for p in m.parameters():
        p.grad = ember.ones_like(p)
    m.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum().item()) == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "BatchNorm1d", "Sequential", "Net"]


def test_to_dtype_keeps_integer_buffers():
    m = Net()
    ptr = m.fc1.weight
    m.to(ember.float64)
    assert m.fc1.weight.dtype == ember.float64
    assert isinstance(m.fc1.weight, nn.Parameter)
    assert m.fc1.weight is not ptr
    assert m.block[1].running_mean.dtype == ember.float64
    assert m.block[1].num_batches_tracked.dtype == ember.int64
    m.float()
    assert m.fc1.weight.dtype == ember.float32
    assert m.double().scale.dtype == ember.float64
    with pytest.raises(TypeError):
        m.to(ember.int32)


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []

    def pre(mod, args):
        calls.append("pre")
        return (args[0] * 0,)

    def post(mod, args, out):
        calls.append("post")
        return out + 1

    h1 = lin.register_forward_pre_hook(pre)
    h2 = lin.register_forward_hook(post)
    with ember.no_grad():
        y = lin(ember.ones(1, 2))
        expect = lin.bias.detach().numpy() + 1
    np.testing.assert_allclose(y.numpy()[0], expect, rtol=1e-6)
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    with ember.no_grad():
        y = lin(ember.zeros(1, 2))
    np.testing.assert_allclose(y.numpy()[0], lin.bias.detach().numpy(), rtol=1e-6)
    assert calls == ["pre", "post"]

    def pre_kw(mod, args, kwargs):
        return args, {}

    lin.register_forward_pre_hook(pre_kw, with_kwargs=True)
    with ember.no_grad():
        lin(ember.zeros(1, 2))


def test_missing_forward_and_extra_repr():
    class NoForward(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match="forward"):
        NoForward()(1)
    assert nn.Linear(3, 4, bias=False).extra_repr() == \
        "in_features=3, out_features=4, bias=False"


def test_containers():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(s) == 3 and isinstance(s[1], nn.ReLU) and isinstance(s[-1], nn.Linear)
    assert isinstance(s[:2], nn.Sequential) and len(s[:2]) == 2
    s.append(nn.Sigmoid())
    assert len(s) == 4
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.Tanh())
    assert len(ml) == 4 and len(list(ml.parameters())) == 6
    md = nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md
    pl = nn.ParameterList([nn.Parameter(ember.ones(2)), ember.zeros(3)])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"w": nn.Parameter(ember.ones(1))})
    pd["v"] = ember.zeros(2)
    assert sorted(pd.keys()) == ["v", "w"] and isinstance(pd["v"], nn.Parameter)
    from collections import OrderedDict
    od = nn.Sequential(OrderedDict([("lin", nn.Linear(1, 1)), ("act", nn.ReLU())]))
    assert [n for n, _ in od.named_children()] == ["lin", "act"]


def test_lazy_linear():
    m = nn.LazyLinear(5)
    with ember.no_grad():
        y = m(ember.ones(2, 7))
    assert tuple(y.shape) == (2, 5)
    assert type(m) is nn.Linear and m.in_features == 7
    assert tuple(m.weight.shape) == (5, 7)


def test_deepcopy_module():
    m = Net()
    c = copy.deepcopy(m)
    assert c.fc1.weight.data_ptr() != m.fc1.weight.data_ptr()
    np.testing.assert_array_equal(c.fc1.weight.detach().numpy(),
                                  m.fc1.weight.detach().numpy())
    assert isinstance(c.fc1.weight, nn.Parameter)


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    tnn = torch.nn

    def build(nn_, mod):
        return nn_.Sequential(
            nn_.Conv2d(1, 8, 3, padding=1), nn_.BatchNorm2d(8), nn_.ReLU(inplace=True),
            nn_.MaxPool2d(2), nn_.Dropout(0.25), nn_.Flatten(),
            nn_.Sequential(nn_.Linear(32, 10, bias=False), nn_.LeakyReLU(0.2)),
            nn_.LSTM(4, 8, num_layers=2, batch_first=True), nn_.Embedding(10, 3, padding_idx=0),
            nn_.LayerNorm(8), nn_.GELU(), nn_.Softmax(dim=1), nn_.AvgPool2d(2),
            nn_.AdaptiveAvgPool2d((1, 1)), nn_.ConvTranspose2d(4, 2, 3, stride=2),
            nn_.GroupNorm(2, 4), nn_.ModuleList([nn_.Identity(), nn_.Tanh()]),
            nn_.MultiheadAttention(8, 2), nn_.CrossEntropyLoss(), nn_.Hardtanh(),
            nn_.ELU(alpha=0.5), nn_.Softplus(), nn_.Bilinear(2, 3, 4), nn_.Conv1d(2, 3, 2),
            nn_.GRU(3, 4, bidirectional=True), nn_.Unflatten(1, (2, 4)),
            nn_.ModuleList([nn_.Linear(2, 2) for _ in range(3)] + [nn_.ReLU()]),
            nn_.TransformerEncoder(nn_.TransformerEncoderLayer(8, 2, 16), 2,
                                   enable_nested_tensor=False),
        )

    assert repr(build(nn, "ember")) == repr(build(tnn, "torch"))
    ep = nn.ParameterList([nn.Parameter(ember.ones(2, 3)), nn.Parameter(ember.ones(1))])
    tp = tnn.ParameterList([tnn.Parameter(torch.ones(2, 3)), tnn.Parameter(torch.ones(1))])
    assert repr(ep).replace("ember.", "torch.") == repr(tp)
    ed = nn.ParameterDict({"a": nn.Parameter(ember.ones(2))})
    td = tnn.ParameterDict({"a": tnn.Parameter(torch.ones(2))})
    assert repr(ed).replace("ember.", "torch.") == repr(td)
