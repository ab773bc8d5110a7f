"""Global switches: each setter has a getter; behaviour checked against PyTorch."""

import warnings

import pytest

import ember


@pytest.fixture(autouse=True)
def restore():
    snap = ember.current_defaults()
    yield
    ember.set_default_dtype(snap.dtype)
    ember.set_default_device(None)
    ember.use_deterministic_algorithms(snap.deterministic, warn_only=snap.deterministic_warn_only)
    ember.set_float32_matmul_precision(snap.float32_matmul_precision)
    ember.set_warn_always(snap.warn_always)


# -- default dtype ------------------------------------------------------------

def test_default_dtype_roundtrip():
    assert ember.get_default_dtype() is ember.float32
    ember.set_default_dtype(ember.float64)
    assert ember.get_default_dtype() is ember.float64
    assert ember.tensor([1.5]).dtype is ember.float64
    assert ember.zeros(2).dtype is ember.float64
    ember.set_default_dtype(ember.float32)
    assert ember.zeros(2).dtype is ember.float32


@pytest.mark.parametrize("bad", ["int32", "int64", "bool", "uint8", "float16", "bfloat16"])
def test_default_dtype_rejects_non_float32_64(bad):
    with pytest.raises(TypeError, match="float32 and"):
        ember.set_default_dtype(getattr(ember, bad))
    assert ember.get_default_dtype() is ember.float32


@pytest.mark.parametrize("bad", ["float32", float, None, 3])
def test_default_dtype_rejects_non_dtypes(bad):
    with pytest.raises(TypeError):
        ember.set_default_dtype(bad)


def test_default_dtype_int_rejected_like_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int32)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int32)


# -- default device -----------------------------------------------------------

def test_default_device_and_scoped_context():
    assert ember.get_default_device() == ember.device("cpu")
    with ember.device("meta"):
        assert ember.get_default_device() == ember.device("meta")
        assert ember.empty(3).device == ember.device("meta")
        with ember.device("cpu"):
            assert ember.get_default_device() == ember.device("cpu")
        assert ember.get_default_device() == ember.device("meta")
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("meta")
    assert ember.get_default_device().type == "meta"
    assert ember.current_defaults().device.type == "meta"
    ember.set_default_device(None)
    assert ember.get_default_device().type == "cpu"
    with pytest.raises(TypeError):
        ember.set_default_device(1.5)


# -- snapshot -----------------------------------------------------------------

def test_snapshot_is_read_only_and_complete():
    snap = ember.current_defaults()
    with pytest.raises(AttributeError):
        snap.dtype = ember.float64
    d = snap._asdict()
    assert set(d) == {"dtype", "device", "deterministic", "deterministic_warn_only",
                      "deterministic_debug_mode", "float32_matmul_precision", "warn_always",
                      "grad_enabled"}
    ember.set_float32_matmul_precision("medium")
    assert snap.float32_matmul_precision == "highest"      # a snapshot, not a view
    assert ember.current_defaults().float32_matmul_precision == "medium"
    assert ember.current_defaults().grad_enabled is True


# -- determinism ----------------------------------------------------------------

def test_deterministic_modes_match_torch():
    torch = pytest.importorskip("torch")
    try:
        for mode in ("default", "warn", "error", 0, 1, 2):
            torch.set_deterministic_debug_mode(mode)
            ember.set_deterministic_debug_mode(mode)
            assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
            assert ember.are_deterministic_algorithms_enabled() == \
                torch.are_deterministic_algorithms_enabled()
            assert ember.is_deterministic_algorithms_warn_only_enabled() == \
                torch.is_deterministic_algorithms_warn_only_enabled()
        for mode, warn_only in ((True, False), (True, True), (False, False)):
            torch.use_deterministic_algorithms(mode, warn_only=warn_only)
            ember.use_deterministic_algorithms(mode, warn_only=warn_only)
            assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
        for bad, exc in (("x", RuntimeError), (5, RuntimeError), (1.0, TypeError)):
            with pytest.raises(exc):
                torch.set_deterministic_debug_mode(bad)
            with pytest.raises(exc):
                ember.set_deterministic_debug_mode(bad)
    finally:
        torch.use_deterministic_algorithms(False)


def test_use_deterministic_algorithms_type_checks():
    with pytest.raises(TypeError):
        ember.use_deterministic_algorithms(1)


def test_is_deterministic_reads_the_declared_registry():
    ember._switches.declare_op("test_scatter_like", deterministic_on=("cpu",))
    assert ember.is_deterministic("test_scatter_like") is True
    assert ember.is_deterministic("test_scatter_like", device="cuda") is False
    assert ember.is_deterministic("test_scatter_like", device=ember.device("cpu")) is True
    assert "test_scatter_like" in ember._C.core._op_info     # one registry, in the core
    ember._switches.declare_op("test_everywhere", deterministic_on=("cpu", "cuda"))
    assert ember.is_deterministic("test_everywhere", "cuda:0")
    with pytest.raises(ValueError, match="did you mean 'test_scatter_like'"):
        ember.is_deterministic("test_scatter_lik")


def test_is_deterministic_understands_device_bool_dicts(monkeypatch):
    monkeypatch.setitem(ember._C.core._op_info, "test_dictform",
                        {"deterministic": {"cpu": True, "cuda": False}})
    assert ember.is_deterministic("test_dictform", "cpu")
    assert not ember.is_deterministic("test_dictform", "cuda")


def test_alert_not_deterministic_raises_or_warns():
    alert = ember._switches._alert_not_deterministic
    alert("index_add_")                       # off: nothing happens
    ember.use_deterministic_algorithms(True)
    with pytest.raises(RuntimeError, match="index_add_ does not have a deterministic"):
        alert("index_add_")
    ember.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="index_add_ does not have a deterministic"):
        alert("index_add_")
    ember._switches.declare_op("test_nd_cuda", deterministic_on=("cpu",))
    ember.use_deterministic_algorithms(True)
    ember._switches._check_deterministic("test_nd_cuda", "cpu")
    with pytest.raises(RuntimeError):
        ember._switches._check_deterministic("test_nd_cuda", "cuda")


# -- matmul precision ---------------------------------------------------------

def test_matmul_precision_roundtrip_and_unknown_value_like_torch():
    torch = pytest.importorskip("torch")
    for p in ("high", "medium", "highest"):
        ember.set_float32_matmul_precision(p)
        assert ember.get_float32_matmul_precision() == p
    ember.set_float32_matmul_precision("medium")
    torch.set_float32_matmul_precision("medium")
    try:
        with warnings.catch_warnings(record=True) as tw:
            warnings.simplefilter("always")
            torch.set_float32_matmul_precision("bogus")
        with warnings.catch_warnings(record=True) as ew:
            warnings.simplefilter("always")
            ember.set_float32_matmul_precision("bogus")
        assert [w.category for w in ew] == [w.category for w in tw] == [UserWarning]
        for valid in ("'highest'", "'high'", "'medium'"):
            assert valid in str(ew[0].message) and valid in str(tw[0].message)
        assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision() \
            == "medium"                                  # unchanged
    finally:
        torch.set_float32_matmul_precision("highest")


# -- warn always ------------------------------------------------------------

def test_warn_always_controls_warn_once():
    sw = ember._switches
    ember.set_warn_always(False)
    assert ember.is_warn_always_enabled() is False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            sw._warn_once("test-once-message")
    assert len(w) == 1
    ember.set_warn_always(True)
    assert ember.is_warn_always_enabled() is True
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            sw._warn_once("test-once-message")
    assert len(w) == 3


# -- predicates ---------------------------------------------------------------

def test_type_predicates():
    t = ember.zeros(2, 3)
    assert ember.is_tensor(t) and not ember.is_tensor([1.0]) and not ember.is_tensor(3)
    assert ember.numel(t) == 6
    assert ember.is_floating_point(t) and not ember.is_floating_point(ember.zeros(2).long())
    assert not ember.is_storage(t)
    assert ember.is_storage(t.untyped_storage())
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.numel(3)
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.is_floating_point(3.0)


def test_typename_like_torch():
    torch = pytest.importorskip("torch")
    for et, tt in ((ember.zeros(2), torch.zeros(2)),
                   (ember.zeros(2, dtype=ember.float64), torch.zeros(2, dtype=torch.float64)),
                   (ember.zeros(2, dtype=ember.int64), torch.zeros(2, dtype=torch.int64)),
                   (ember.zeros(2, dtype=ember.bool), torch.zeros(2, dtype=torch.bool))):
        assert ember.typename(et) == torch.typename(tt).replace("torch.", "ember.")
    for obj in (3, 2.5, "s", None, [1], warnings.catch_warnings, pytest.raises):
        assert ember.typename(obj) == torch.typename(obj)
