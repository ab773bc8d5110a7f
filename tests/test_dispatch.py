"""The dispatcher: an out-of-tree backend defined here runs creation, elementwise and
reduction ops on ``device="foo"`` tensors through the ordinary API; a Python mode sees
every op; mixed devices give a clear error."""

import numpy as np
import pytest

import ember
from ember import library

NP = {
    ember.float32: np.float32,
    ember.float64: np.float64,
    ember.int64: np.int64,
    ember.int32: np.int32,
    ember.bool: np.bool_,
    ember.uint8: np.uint8,
}


class FooBackend:
    """A toy accelerator whose memory is host memory owned by NumPy arrays."""

    def __init__(self):
        self.allocations = 0
        self.calls = []

    def empty(self, shape, dtype, device):
        arr = np.empty(shape, NP[dtype])
        self.allocations += 1
        return library.wrap_memory(arr.ctypes.data, shape, dtype, device, arr)

    def as_cpu(self, t):
        """A zero-copy CPU view of a foo tensor (the plugin's own business)."""
        return library.wrap_memory(t.data_ptr(), t.shape, t.dtype, "cpu", t, strides=t.stride())

    def from_cpu(self, c, device):
        out = self.empty(tuple(c.shape), c.dtype, device)
        self.as_cpu(out).copy_(c)
        return out

    def register(self):
        try:
            library.register_backend("foo")
        except RuntimeError:
            pass  # registered by an earlier test in this process
        library.register_kernel("empty", "foo", self.empty)
        library.register_kernel("fill_", "foo", lambda t, v: self.as_cpu(t).fill_(v))
        library.register_kernel(
            "copy_",
            "foo",
            lambda d, s: (self.as_cpu(d) if d.device.type == "foo" else d).copy_(
                self.as_cpu(s) if s.device.type == "foo" else s
            ),
        )

        def to(t, device, dtype):
            if device.type == "cpu":
                return self.as_cpu(t).to(dtype).clone()
            return self.from_cpu(
                t.to(dtype) if t.device.type == "cpu" else self.as_cpu(t).to(dtype), device
            )

        library.register_kernel("to", "foo", to)

        def lift(name, fn):
            def kernel(*args, **kwargs):
                self.calls.append(name)
                dev = next(a.device for a in args if isinstance(a, ember.Tensor))
                cargs = [self.as_cpu(a) if isinstance(a, ember.Tensor) else a for a in args]
                r = fn(*cargs, **kwargs)
                return self.from_cpu(r, dev) if isinstance(r, ember.Tensor) else r

            return kernel

        for name in ("add", "mul", "sub", "exp", "neg", "sum", "mean", "amax", "clone"):
            fn = getattr(ember, name, None) or getattr(ember.Tensor, name, None)
            if fn is None:
                continue
            library.register_kernel(name, "foo", lift(name, fn))


@pytest.fixture(scope="module")
def foo():
    b = FooBackend()
    b.register()
    return b


def test_creation_on_plugin_device(foo):
    before = foo.allocations
    z = ember.zeros(2, 3, device="foo")
    o = ember.ones(4, device=ember.device("foo"))
    f = ember.full((2,), 7.0, device="foo")
    assert z.device == ember.device("foo") and z.device.type == "foo"
    assert foo.allocations - before == 3
    assert z.to("cpu").tolist() == [[0.0] * 3] * 2
    assert o.tolist() == [1.0] * 4
    assert f.cpu().tolist() == [7.0, 7.0]


def test_elementwise_and_reductions_on_plugin_device(foo):
    a = ember.tensor([[1.0, 2.0], [3.0, 4.0]]).to("foo")
    b = ember.ones(2, 2, device="foo")
    c = (a + b) * 2 - a
    assert c.device.type == "foo"
    np.testing.assert_allclose(c.cpu().numpy(), [[3, 4], [5, 6]])
    e = ember.exp(a)
    np.testing.assert_allclose(e.cpu().numpy(), np.exp([[1, 2], [3, 4]]), rtol=1e-6)
    s = a.sum()
    assert s.device.type == "foo" and s.item() == 10.0
    assert {"add", "mul", "sub", "exp", "sum"} <= set(foo.calls)
    assert "foo(" not in repr(a) and "device='foo'" in repr(a)


def test_missing_kernel_is_a_clear_error(foo):
    a = ember.ones(2, device="foo")
    with pytest.raises(NotImplementedError, match="'atan2'.*'foo'"):
        ember.atan2(a, a)


def test_mixed_devices_name_op_argument_and_devices(foo):
    a = ember.ones(2, device="foo")
    with pytest.raises(RuntimeError, match=r"same device.*cpu.*foo|same device.*foo.*cpu") as e:
        ember.add(ember.ones(2), a)
    assert "argument other" in str(e.value) and "add" in str(e.value)


def test_unknown_device_type():
    with pytest.raises(RuntimeError, match="device type"):
        ember.device("bar")


def test_python_mode_sees_every_op():
    class Log(library.DispatchMode):
        def __init__(self):
            self.seen = []

        def __ember_dispatch__(self, name, func, args, kwargs):
            self.seen.append(name)
            return func(*args, **kwargs)

    x = ember.ones(3)
    with Log() as m:
        y = ember.exp(x * 2) + 1
    assert m.seen == ["mul", "exp", "add"]
    np.testing.assert_allclose(y.numpy(), np.exp(2.0) + 1, rtol=1e-6)
    # outside the mode nothing is intercepted
    before = len(m.seen)
    _ = x + x
    assert len(m.seen) == before


def test_mode_can_replace_results():
    class Zero(library.DispatchMode):
        def __ember_dispatch__(self, name, func, args, kwargs):
            return ember.zeros(2) if name == "mul" else func(*args, **kwargs)

    with Zero():
        r = ember.ones(2) * 5 + 1
    assert r.tolist() == [1.0, 1.0]
