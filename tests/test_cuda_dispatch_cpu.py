"""CUDA tensors on a machine without a GPU.

Without a device, asking for one raises the RuntimeError that carries
``ember.cuda.unavailable_reason()``.  Then every device test of
tests/cuda/test_device_tensors.py runs here over a stand-in for libember_cuda.so
whose device memory is host memory locked against the CPU (tests/cuda/fake_device.py):
that checks the CUDA dispatcher's glue (descriptors, strides, argument order, dtype
codes, autograd records) and that no CPU kernel ever touches device memory."""

import numpy as np
import pytest

import ember
from ember.cuda import _dispatch, _kernels
from tests.cuda import test_device_extra_ops as _device_extra_ops
from tests.cuda import test_device_scan_optim as _device_scan_optim
from tests.cuda import test_device_tensors as _device_tests
from tests.cuda.fake_device import FakeDevice
from tests.cuda.harness import c_enums

needs_no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="a CUDA device is present")


@needs_no_gpu
@pytest.mark.parametrize("make", [
    lambda: ember.zeros(3, device="cuda"), lambda: ember.ones(2, device="cuda:0"),
    lambda: ember.tensor([1.0], device="cuda"), lambda: ember.ones(2).cuda(),
    lambda: ember.ones(2).to("cuda"), lambda: ember.rand(2, device="cuda"),
    lambda: ember.arange(3, device="cuda"), lambda: ember.empty(2, device=ember.device("cuda"))])
def test_without_a_device_cuda_tensors_raise_the_reason(make):
    reason = ember.cuda.unavailable_reason()
    assert reason
    with pytest.raises(RuntimeError, match="CUDA unavailable") as e:
        make()
    assert reason in str(e.value)


@needs_no_gpu
def test_pin_memory_without_a_device_refuses():
    with pytest.raises(RuntimeError):
        ember.ones(3).pin_memory()
    assert ember.ones(3).is_pinned() is False


def test_op_codes_mirror_the_c_headers():
    ew = c_enums("ember_ew.h")
    for table, prefix in ((_kernels.EW_BIN, "EW_"), (_kernels.EW_CMP, "EW_"),
                          (_kernels.EW_UN, "EW_"), (_kernels.EW_PRED, "EW_")):
        for name, code in table.items():
            assert ew[prefix + name] == code, name
    rd = c_enums("ember_reduce.h")
    for name, code in _kernels.RD.items():
        assert rd["RD_" + name] == code, name
    rnd = c_enums("ember_random.h")
    assert rnd["EM_RD_UNIFORM"] == _kernels.RAND_UNIFORM
    assert rnd["EM_RD_NORMAL"] == _kernels.RAND_NORMAL


def test_coalesce_merges_contiguous_dims_and_keeps_broadcast_ones():
    assert _kernels.coalesce((2, 3, 4), [(12, 4, 1), (12, 4, 1)]) == ((24,), [(1,), (1,)])
    assert _kernels.coalesce((2, 3, 4), [(12, 4, 1), (0, 4, 1)]) == ((2, 12), [(12, 1),
                                                                              (0, 1)])
    assert _kernels.coalesce((2, 1, 4), [(4, 4, 1), (1, 1, 2)]) == ((2, 4), [(4, 1), (1, 2)])
    assert _kernels.coalesce((), [(), ()]) == ((), [(), ()])
    nd = _kernels.make_nd((3, 5), (5, 1), (1, 3))
    assert (nd.ndim, nd.nargs, nd.shape[0], nd.shape[1]) == (2, 2, 3, 5)
    assert (nd.strides[1][0], nd.strides[1][1]) == (1, 3)


def test_supported_ops_cover_the_issue_list():
    ops = set(_dispatch.supported_ops())
    for name in ("add", "mul", "div", "exp", "where", "sum", "mean", "amax", "max", "argmax",
                 "mm", "bmm", "matmul", "linear", "softmax", "log_softmax", "index_select",
                 "gather", "index_add", "cat", "rand", "randn", "randint", "clone", "lerp",
                 "conv2d", "conv1d", "conv_transpose2d", "conv2d_input_grad",
                 "conv2d_weight_grad", "max_pool2d", "max_pool2d_backward", "avg_pool2d",
                 "avg_pool2d_backward",
                 "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward", "getitem", "setitem",
                 "index_put", "index_put_", "randperm", "multinomial"):
        assert name in ops, name


@pytest.fixture(autouse=True)
def _fake_device(request):
    if request.function.__module__ not in (_device_tests.__name__, _device_scan_optim.__name__,
                                           _device_extra_ops.__name__):
        yield None
        return
    with FakeDevice() as fd:
        yield fd


# the device tests, collected here too (without their `cuda` mark)
for _mod in (_device_tests, _device_scan_optim, _device_extra_ops):
    for _name in dir(_mod):
        if _name.startswith("test_"):
            globals()[_name] = getattr(_mod, _name)


def test_device_memory_goes_back_to_the_allocator():
    with FakeDevice() as fd:
        t = ember.arange(6.0, device="cuda")
        p = t.data_ptr()
        assert fd.arena.contains(p) and p in fd.lib.live
        np.testing.assert_array_equal(t.cpu().numpy(), np.arange(6.0))
        v = t[2:]
        del t
        assert p in fd.lib.live              # a view keeps the storage alive
        del v
        assert p not in fd.lib.live


def test_the_stand_in_checks_arguments_against_the_c_prototypes():
    with FakeDevice() as fd:
        with pytest.raises(AssertionError, match="emc_reduce: 2 arguments"):
            fd.lib.emc_reduce(0, 8)
        with pytest.raises(AssertionError, match="does not convert"):
            fd.lib.emc_fill(8, None, None, 1.5, None)


def test_data_loader_pins_batches_when_cuda_is_usable():
    from ember.utils.data import DataLoader, TensorDataset

    ds = TensorDataset(ember.arange(10.0), ember.arange(10))
    with FakeDevice():
        batches = list(DataLoader(ds, batch_size=4, pin_memory=True))
        assert all(t.is_pinned() for b in batches for t in b)
        np.testing.assert_array_equal(batches[1][0].numpy(), [4.0, 5.0, 6.0, 7.0])
        np.testing.assert_array_equal(batches[2][1].numpy(), [8, 9])
        assert not any(t.is_pinned() for b in DataLoader(ds, batch_size=4) for t in b)
    if not ember.cuda.is_available():
        assert not any(t.is_pinned() for b in DataLoader(ds, batch_size=4, pin_memory=True)
                       for t in b)


def test_device_index_and_placement():
    with FakeDevice():             # the stand-in has one device
        t = ember.zeros(2, device="cuda")
        assert t.device.index == 0 and t.get_device() == 0
        assert ember.zeros(2, device="cuda:0").device == t.device
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            ember.zeros(2, device="cuda:1")
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            t.to("cuda:1")
        assert t.cuda() is t and t.cuda(0) is t
        assert t.to("cuda", ember.float64).dtype == ember.float64
        with pytest.raises(RuntimeError, match="Could not run 'kthvalue'.*CUDA"):
            ember.kthvalue(t, 1)


def test_cnn_training_step_over_the_stand_in():
    from tests.cuda.test_training import cnn_losses

    cpu_losses, _ = cnn_losses("cpu", steps=2)
    with FakeDevice() as fd:
        dev_losses, model = cnn_losses("cuda", steps=2)
        assert all(p.device.type == "cuda" for p in model.parameters())
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for name in ("conv2d_fwd", "conv2d_bwd_input", "conv2d_bwd_weight", "max_pool2d_fwd",
                 "avg_pool2d_fwd", "avg_pool2d_bwd", ("batch_norm_fwd", 1),
                 ("batch_norm_bwd", 1)):
        assert name in fd.lib.calls, name


def test_mask_coordinates_and_index_put_launch_details():
    with FakeDevice() as fd:
        from ember.cuda._index_ops import nonzero_coords

        m = ember.tensor([[True, False, True], [False, False, True]])
        np.testing.assert_array_equal(nonzero_coords(m.cuda()).cpu().numpy(),
                                      ember.nonzero(m).numpy())
        assert tuple(nonzero_coords(ember.zeros(0, 3, dtype=ember.bool, device="cuda"))
                     .shape) == (0, 2)
        x = ember.zeros(4, device="cuda")
        prev = ember.are_deterministic_algorithms_enabled()
        ember.use_deterministic_algorithms(True)
        try:
            x.index_put_((ember.tensor([1, 1, 3]).cuda(),), ember.ones(3, device="cuda"),
                         accumulate=True)
        finally:
            ember.use_deterministic_algorithms(prev)
        assert ("index_put", 1, 1) in fd.lib.calls
        np.testing.assert_array_equal(x.cpu().numpy(), [0.0, 2.0, 0.0, 1.0])
        x.index_put_((ember.tensor([0, 2]).cuda(),), ember.ones(2, device="cuda"),
                     accumulate=True)
        assert ("index_put", 1, 0) in fd.lib.calls     # float sums: atomics unless asked


def _memcpy_kinds(fd):
    """Record the kind of every cudaMemcpyAsync on the stand-in's runtime."""
    kinds, copy = [], fd.rt.cudaMemcpyAsync

    def spy(dst, src, n, kind, stream):
        kinds.append(kind.value if hasattr(kind, "value") else kind)
        return copy(dst, src, n, kind, stream)
    fd.rt.cudaMemcpyAsync = spy
    return kinds


def test_an_optimizer_step_is_one_launch_per_group_and_clipping_never_syncs():
    with FakeDevice() as fd:
        ps = [ember.ones(s, device="cuda", requires_grad=True) for s in ((300, 40), (5,))]
        for p in ps:
            p.grad = ember.full(p.shape, 0.5, device="cuda")
        for opt in (ember.optim.SGD(ps, lr=0.1, momentum=0.9),
                    ember.optim.AdamW([{"params": ps[:1]}, {"params": ps[1:]}], amsgrad=True)):
            opt.step()                   # the first step also makes the state
            fd.lib.calls.clear()
            opt.step()
            kind = "sgd_multi" if isinstance(opt, ember.optim.SGD) else "adam_multi"
            groups = len(opt.param_groups)
            assert [c for c in fd.lib.calls if c[0] == kind] == \
                [(kind, 8, len(g["params"])) for g in opt.param_groups]
            assert len(fd.lib.calls) == groups, fd.lib.calls     # nothing per tensor
        fd.lib.calls.clear()
        kinds = _memcpy_kinds(fd)
        total = ember.nn.utils.clip_grad_norm_(ps, 1.0)
        assert [c[0] for c in fd.lib.calls] == ["total_norm", "clip_multi"]
        assert _kernels.D2H not in kinds            # no device-to-host copy, so no sync
        np.testing.assert_allclose(float(total), np.sqrt(12005 * 0.25), rtol=1e-6)
        np.testing.assert_allclose(ps[1].grad.cpu().numpy(), 0.5 / (float(total) + 1e-6),
                                   rtol=1e-6)


def test_copies_between_devices_never_touch_the_host():
    from tests.cuda.test_device_scan_optim import check_cross_device, cross_device_ops

    a = ember.arange(12.0).reshape(3, 4)
    with FakeDevice(ndev=2) as fd:
        a0 = a.to("cuda:0")
        kinds = _memcpy_kinds(fd)
        out = cross_device_ops(a0)
        assert _kernels.H2D not in kinds and _kernels.D2H not in kinds, kinds
        assert fd.rt.peer_copies >= 8
        check_cross_device(out, a)


def test_attention_takes_the_fused_kernels_where_they_fit():
    q = ember.randn(2, 5, 8)
    with FakeDevice() as fd:
        ember.manual_seed(1)
        y = ember.nn.functional.scaled_dot_product_attention(
            q.cuda().requires_grad_(), q.cuda(), q.cuda(), dropout_p=0.5, is_causal=True)
        y.sum().backward()
        assert ("sdpa_fwd", 1, True) in fd.lib.calls and ("sdpa_bwd", 1, True) in fd.lib.calls
        fd.lib.calls.clear()
        ember.nn.functional.scaled_dot_product_attention(
            q.cuda(), q.cuda(), q.cuda(), attn_mask=ember.ones(5, 5, device="cuda"))
        assert not any(c[0] == "sdpa_fwd" for c in fd.lib.calls if isinstance(c, tuple))


def test_tf32_products_on_hopper_go_to_the_k_major_layout(monkeypatch):
    # wgmma reads 32-bit operands only as A @ B.T: the dispatcher re-lays out the rest
    from ember.cuda import _device_ops

    monkeypatch.setattr(_device_ops, "_TF32_RELAYOUT_FLOPS", 0)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 7)), rng.standard_normal((7, 3))
    x = rng.standard_normal((2, 7, 5))
    prev = ember.get_float32_matmul_precision()
    with FakeDevice() as fd:
        fd.lib.hopper = 1
        ad, bd, xd = (ember.tensor(v, dtype=ember.float32, device="cuda") for v in (a, b, x))
        cases = [(lambda: ad @ bd, a @ b), (lambda: bd.t() @ ad.t(), b.T @ a.T),
                 (lambda: ad @ bd.t().contiguous().t(), a @ b),
                 (lambda: xd.transpose(1, 2) @ bd, x.transpose(0, 2, 1) @ b)]
        try:
            ember.set_float32_matmul_precision("high")
            for make, ref in cases:
                fd.lib.calls.clear()
                got = make()
                assert [c for c in fd.lib.calls if c[0] == "gemm"] == [("gemm", 0, 1)]
                np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-5, atol=1e-5)
            ember.set_float32_matmul_precision("highest")   # exact fp32: any layout
            fd.lib.calls.clear()
            np.testing.assert_allclose((bd.t() @ ad.t()).cpu().numpy(), b.T @ a.T, rtol=1e-5)
            assert ("gemm", 1, 1) in fd.lib.calls
            ember.set_float32_matmul_precision("high")
            fd.lib.calls.clear()
            h = (bd.half().t() @ ad.half().t()).float()   # 16-bit: wgmma transposes
            assert ("gemm", 1, 1) in fd.lib.calls
            np.testing.assert_allclose(h.cpu().numpy(), b.T.astype(np.float16).astype(float)
                                       @ a.T.astype(np.float16).astype(float), rtol=1e-2,
                                       atol=1e-2)
        finally:
            ember.set_float32_matmul_precision(prev)
