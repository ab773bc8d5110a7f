"""ember.save / ember.load: round trips (PyTorch's layout, the default, and ember's own
format), views, map_location, mmap, safety (no code runs), damaged files, atomic saves (a
child killed mid-save), safetensors."""
import io
import math
import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import serialization as S
from ember._serialization import CheckpointError, _ember, _io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]


def make(dtype, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        a = rng.integers(0, 2, n).astype(bool)
    elif dtype in ("uint8", "int8", "int16", "int32", "int64"):
        info = np.iinfo(dtype)
        a = rng.integers(max(info.min, -10**6), min(info.max, 10**6), n).astype(dtype)
    else:
        a = (rng.standard_normal(n) * 10).astype("float32" if dtype == "bfloat16" else dtype)
    t = ember.from_numpy(a.reshape(shape).copy())
    return t.bfloat16() if dtype == "bfloat16" else t


def npy(t):
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.array(t)


def same(a, b):
    assert isinstance(b, ember.Tensor)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(npy(a.detach()), npy(b.detach()))


FORMATS = ["torch", "ember"]
STORAGE = {"torch": "archive/data/", "ember": "ember/storages/"}   # + the storage's index


@pytest.fixture(params=FORMATS)
def fmt(request):
    return request.param


def roundtrip(obj, fmt="torch", **load_kw):
    buf = io.BytesIO()
    ember.save(obj, buf, format=fmt)
    buf.seek(0)
    return ember.load(buf, **load_kw)


# ----------------------------------------------------------------------------
# round trips

@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips(dtype, fmt):
    for shape in [(3, 4), (), (0,), (2, 0, 3), (5,)]:
        t = make(dtype, shape)
        same(t, roundtrip(t, fmt=fmt))


def test_vocabulary_round_trips_with_types(fmt):
    od = OrderedDict([("b", 1), ("a", 2)])
    obj = {
        "none": None, "t": True, "f": False, "int": -7, "big": 2**100, "float": 1.5,
        "negzero": -0.0, "nan": math.nan, "inf": math.inf, "ninf": -math.inf,
        "str": "héllo ✓ \x00 \ud800", "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"),
        "tuple": (1, (2, [3])), "list": [1, [2, (3,)]], "od": od, "set": {1, "a"},
        "frozenset": frozenset({2}), "complex": complex(1, math.nan), 3: "int key",
        (1, 2): "tuple key", None: "none key", 2.5: "float key",
        "dtype": [getattr(ember, d) for d in DTYPES], "device": ember.device("cpu"),
        "dev2": ember.device("cuda", 1), "size": ember.Size([2, 3]), "empty": [(), [], {}],
    }
    r = roundtrip(obj, fmt=fmt)
    assert list(r) == list(obj)
    for k, v in obj.items():
        if k in ("nan", "complex"):
            continue
        assert r[k] == v and type(r[k]) is type(v), k
    assert math.isnan(r["nan"]) and math.isnan(r["complex"].imag)
    assert math.copysign(1, r["negzero"]) == -1
    assert type(r["od"]) is OrderedDict and list(r["od"]) == ["b", "a"]
    assert type(r["tuple"][1][1]) is list and type(r["list"][1][1]) is tuple
    assert r["dtype"][7] is ember.bfloat16
    assert type(r["size"]) is ember.Size


def test_state_dict_metadata_attribute_survives(fmt):
    sd = OrderedDict(w=make("float32"))
    sd._metadata = {"": {"version": 2}}
    r = roundtrip(sd, fmt=fmt)
    assert r._metadata == {"": {"version": 2}}
    same(sd["w"], r["w"])


def test_views_stay_views_of_one_storage(fmt):
    base = make("float32", (4, 6))
    views = {
        "base": base, "t": base.t(), "slice": base[1:3], "narrow": base.narrow(1, 2, 3),
        "select": base.select(1, 5), "diag": base.diagonal(), "expand": base[0:1].expand(3, 6),
        "strided": base.as_strided((2, 2), (7, 2), 3), "view": base.view(24)[5:],
    }
    r = roundtrip(views, fmt=fmt)
    st = r["base"].untyped_storage()
    for k, v in views.items():
        assert r[k].untyped_storage() is st, k
        assert r[k].stride() == v.stride() and r[k].storage_offset() == v.storage_offset(), k
        same(v, r[k])
    r["base"].fill_(7.0)                        # still one storage: the views see it
    assert npy(r["t"]).min() == 7.0 and npy(r["strided"]).max() == 7.0


def test_each_storage_written_once(fmt):
    base = make("float64", (1000,))
    buf = io.BytesIO()
    ember.save([base[i:i + 10] for i in range(0, 1000, 10)], buf, format=fmt)
    zf = zipfile.ZipFile(buf)
    stored = [i for i in zf.infolist() if i.filename.startswith(STORAGE[fmt])]
    assert [i.file_size for i in stored] == [8000]


def test_identity_shared_containers_and_cycles(fmt):
    t = make("int32")
    shared = [1, 2]
    cyc = [0]
    cyc.append(cyc)
    d = {}
    d["self"] = d
    r = roundtrip({"a": t, "b": t, "s1": shared, "s2": shared, "cyc": cyc, "d": d,
                   "tup": (shared, shared), "storage": t.untyped_storage()}, fmt=fmt)
    assert r["a"] is r["b"] and r["storage"] is r["a"].untyped_storage()
    assert r["s1"] is r["s2"] and r["tup"][0] is r["s1"] and r["tup"][1] is r["s1"]
    assert r["cyc"][1] is r["cyc"] and r["d"]["self"] is r["d"]


def test_requires_grad_survives(fmt):
    w = make("float32").requires_grad_(True)
    i = make("int64")
    r = roundtrip({"w": w, "i": i, "view": w[1:]}, fmt=fmt)
    assert r["w"].requires_grad and r["w"].is_leaf and not r["i"].requires_grad
    assert r["view"].untyped_storage() is r["w"].untyped_storage()


def test_parameter_survives(fmt):
    nn = pytest.importorskip("ember.nn")
    p = nn.Parameter(make("float32"))
    q = nn.Parameter(make("float32", seed=1), requires_grad=False)
    r = roundtrip({"p": p, "q": q, "plain": make("float32")}, fmt=fmt)
    assert isinstance(r["p"], nn.Parameter) and r["p"].requires_grad
    assert isinstance(r["q"], nn.Parameter) and not r["q"].requires_grad
    assert not isinstance(r["plain"], nn.Parameter)
    same(p, r["p"])


def test_optimizer_like_state_dict(fmt):
    p0 = make("float32", seed=1)
    sd = {"state": {0: {"step": ember.tensor(3.0), "exp_avg": p0 * 0.1, "exp_avg_sq": p0 * p0},
                    1: {"step": ember.tensor(3.0), "momentum_buffer": None}},
          "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                            "weight_decay": 0, "amsgrad": False, "foreach": None,
                            "params": [0, 1]}]}
    r = roundtrip(sd, fmt=fmt)
    assert r["param_groups"] == sd["param_groups"]
    assert set(r["state"]) == {0, 1}
    same(sd["state"][0]["exp_avg_sq"], r["state"][0]["exp_avg_sq"])
    assert r["state"][1]["momentum_buffer"] is None


def test_meta_tensors_round_trip_without_data(fmt):
    m = ember.empty(3, 4, device="meta")
    buf = io.BytesIO()
    ember.save({"m": m}, buf, format=fmt)
    assert not any(n.startswith(STORAGE[fmt]) for n in zipfile.ZipFile(buf).namelist())
    buf.seek(0)
    r = ember.load(buf)["m"]
    assert r.device.type == "meta" and tuple(r.shape) == (3, 4)


def test_files_paths_and_pathlib(tmp_path):
    obj = {"x": make("float32"), "y": [1, 2]}
    p = tmp_path / "ckpt.pt"
    ember.save(obj, p)                                      # pathlib.Path
    same(obj["x"], ember.load(str(p))["x"])                 # str
    same(obj["x"], ember.load(os.fsencode(p))["x"])         # bytes path
    with open(p, "rb") as f:                                # file object
        assert ember.load(f)["y"] == [1, 2]
    with open(tmp_path / "b.pt", "wb") as f:
        ember.save(obj, f)
    same(obj["x"], ember.load(tmp_path / "b.pt")["x"])
    # the archive is a valid zip with stored, 64-byte aligned storages
    zf = zipfile.ZipFile(p)
    assert zf.testzip() is None
    ar = _io.Archive(open(p, "rb"), "x")
    for name, info in ar.infos.items():
        assert info.compress_type == zipfile.ZIP_STORED
        assert ar.data_offset(name) % 64 == 0
    assert ember.load(tmp_path / "b.pt", weights_only=True)["y"] == [1, 2]


def test_embedded_in_a_stream_after_other_bytes():
    buf = io.BytesIO()
    buf.write(b"x" * 13)
    t = make("float32")
    ember.save({"t": t}, buf)
    data = buf.getvalue()
    same(t, ember.load(io.BytesIO(data))["t"])


def test_save_streams_to_a_write_only_sink(fmt):
    class Sink:                                   # a pipe or socket: write() only
        def __init__(self):
            self.parts = []

        def write(self, b):
            self.parts.append(bytes(b))
            return len(self.parts[-1])

    sink = Sink()
    obj = {"x": make("float32", (300, 300)), "y": make("int8")}
    ember.save(obj, sink, format=fmt)
    r = ember.load(io.BytesIO(b"".join(sink.parts)))
    same(obj["x"], r["x"])
    same(obj["y"], r["y"])


def test_saves_are_deterministic(fmt):
    obj = {"x": make("float32"), "l": [1.5, "a"]}
    a, b = io.BytesIO(), io.BytesIO()
    ember.save(obj, a, format=fmt)
    ember.save(obj, b, format=fmt)
    assert a.getvalue() == b.getvalue()


def test_zip64_records(monkeypatch, fmt):
    monkeypatch.setattr(_io, "ZIP64_LIMIT", 0)   # every size/offset "overflows"
    obj = {"x": make("float32"), "y": make("bfloat16", (7,))}
    buf = io.BytesIO()
    ember.save(obj, buf, format=fmt)
    assert zipfile.ZipFile(io.BytesIO(buf.getvalue())).testzip() is None
    r = ember.load(io.BytesIO(buf.getvalue()))
    same(obj["y"], r["y"])


def test_bad_arguments():
    with pytest.raises(TypeError):
        ember.save({}, 3)
    with pytest.raises(FileNotFoundError, match="no such file"):
        ember.load("/nonexistent/x.pt")
    with pytest.raises(FileNotFoundError, match="folder of '/nonexistent/x.pt' does not exist"):
        ember.save({}, "/nonexistent/x.pt")
    with pytest.raises(TypeError, match="binary"):
        ember.load(io.StringIO("x"))


def test_too_deep_nesting_is_a_clear_error():
    x = []
    for _ in range(100000):
        x = [x]
    with pytest.raises(ValueError, match="nested too deeply"):
        ember.save(x, io.BytesIO())


# ----------------------------------------------------------------------------
# map_location

def _craft(obj, edit):
    """Save obj, then rewrite data.json through `edit(dict)` (a valid, re-CRC'd file)."""
    import json

    buf = io.BytesIO()
    ember.save(obj, buf, format="ember")
    zf = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    zw = _io.ZipWriter(out)
    for name in zf.namelist():
        raw = zf.read(name)
        if name == _ember.DATA:
            d = json.loads(raw)
            edit(d)
            raw = json.dumps(d).encode()
        elif name == _ember.HEADER and edit.__name__ == "header":
            d = json.loads(raw)
            edit(d)
            raw = json.dumps(d).encode()
        zw.add(name, raw)
    zw.close()
    return out.getvalue()


def test_map_location_forms(fmt):
    x = make("float32")
    obj = {"x": x, "v": x[1:]}
    for ml in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, loc: None,
               lambda s, loc: s):
        r = roundtrip(obj, map_location=ml, fmt=fmt)
        same(x, r["x"])
        assert r["v"].untyped_storage() is r["x"].untyped_storage()
    seen = []
    roundtrip(obj, map_location=lambda s, loc: seen.append((s.nbytes(), loc)))
    assert seen == [(48, "cpu")]
    r = roundtrip(obj, map_location="meta", fmt=fmt)
    assert r["x"].device.type == "meta" and r["v"].untyped_storage() is r["x"].untyped_storage()
    with pytest.raises(TypeError, match="map_location"):
        roundtrip(obj, map_location=3, fmt=fmt)


def test_map_location_from_a_cuda_checkpoint():
    x = make("float32")

    def to_cuda(d):
        d["storages"][0]["device"] = "cuda:0"

    data = _craft({"x": x}, to_cuda)
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="map_location"):
            ember.load(io.BytesIO(data))
    for ml in ("cpu", {"cuda:0": "cpu"}, ember.device("cpu")):
        r = ember.load(io.BytesIO(data), map_location=ml)
        assert r["x"].device.type == "cpu"
        same(x, r["x"])
    locs = []
    ember.load(io.BytesIO(data), map_location=lambda s, loc: locs.append(loc) or s)
    assert locs == ["cuda:0"]

    def to_plugin(d):
        d["storages"][0]["device"] = "someplugin:0"    # a device this build does not know

    data = _craft({"x": x}, to_plugin)
    same(x, ember.load(io.BytesIO(data), map_location="cpu")["x"])
    with pytest.raises(RuntimeError, match="someplugin"):
        ember.load(io.BytesIO(data))


# ----------------------------------------------------------------------------
# mmap

def _mapping_of(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(v, 16) for v in parts[0].split("-"))
            if lo <= addr < hi:
                return parts[5] if len(parts) > 5 else ""
    return None


def test_mmap_maps_the_file(tmp_path, fmt):
    p = tmp_path / "m.pt"
    x, y = make("float32", (64, 64)), make("bfloat16", (10,))
    ember.save({"x": x, "y": y, "v": x[3:, 2:], "z": ember.empty(0)}, p, format=fmt)
    r = ember.load(p, mmap=True)
    same(x, r["x"])
    same(y, r["y"])
    assert r["v"].untyped_storage() is r["x"].untyped_storage()
    owner = r["x"].untyped_storage()._owner
    assert isinstance(owner, _io.MappedFile)
    assert owner.base <= r["x"].data_ptr() < owner.base + owner.size
    assert r["x"].data_ptr() % 64 == 0
    if os.path.exists("/proc/self/maps"):
        assert _mapping_of(r["x"].data_ptr()) == str(p.resolve())
    before = p.read_bytes()
    r["x"].fill_(1.0)                             # copy-on-write: the file is not touched
    assert p.read_bytes() == before
    same(x, ember.load(p, mmap=True)["x"])
    with open(p, "rb") as f:
        same(x, ember.load(f, mmap=True)["x"])
    del r, owner                                  # the map lives as long as its tensors


def test_mmap_keeps_the_map_alive(tmp_path):
    p = tmp_path / "m.pt"
    x = make("float64", (100,))
    ember.save(x, p)
    r = ember.load(p, mmap=True)
    os.unlink(p)
    import gc

    gc.collect()
    same(x, r)


def test_mmap_needs_a_real_file():
    with pytest.raises(ValueError, match="mmap=True"):
        roundtrip(make("float32"), mmap=True)


# ----------------------------------------------------------------------------
# safety: nothing outside the vocabulary is unpickled unless allowed

class Marker:
    """Unpickling this creates a file: proof that code ran."""

    path = None

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y) == (other.x, other.y)


def test_malicious_pickle_member_does_not_run(tmp_path, fmt):
    marker = tmp_path / "pwned"
    buf = io.BytesIO()
    ember.save({"w": make("float32"), "evil": Marker(str(marker))}, buf, format=fmt)
    for wo in (True, None):
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError) as ei:
            ember.load(buf, weights_only=wo)
        msg = str(ei.value)
        assert ".open'" in msg and (fmt == "torch" or "Marker" in msg)   # ember's names it
        assert "add_safe_globals" in msg and "weights_only=False" in msg
    assert not marker.exists()
    buf.seek(0)
    ember.load(buf, weights_only=False)            # the payload is live: trusted loads run it
    assert marker.exists()


def test_crafted_torch_style_pickle_does_not_run(tmp_path):
    marker = tmp_path / "pwned"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({"a": Marker(str(marker))}, protocol=2))
        zf.writestr("archive/version", "3\n")
    for payload in (Marker(str(marker)), os.system):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("archive/data.pkl", pickle.dumps({"a": payload}, protocol=2))
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
            ember.load(buf)
    assert not marker.exists()


def test_safe_globals_allow_a_class():
    buf = io.BytesIO()
    t = make("float32")
    ember.save({"pt": Point(1, t), "t": t}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        ember.load(buf)
    with S.safe_globals([Point]):
        buf.seek(0)
        r = ember.load(buf)
    assert r["pt"].x == 1 and r["pt"].y is r["t"]       # tensors inside keep identity
    assert Point not in S.get_safe_globals()
    S.add_safe_globals([(Point, f"{Point.__module__}.Point")])
    try:
        buf.seek(0)
        assert ember.load(buf)["pt"].x == 1
    finally:
        S.clear_safe_globals()
    buf.seek(0)
    r = ember.load(buf, weights_only=False)
    assert r["pt"] == Point(1, r["t"]) and r["pt"].y is r["t"]


def test_out_of_bounds_view_in_a_crafted_file_is_refused():
    def grow(d):
        d["tensors"][0]["shape"] = [1000, 4]

    with pytest.raises(CheckpointError, match="reaches past its storage"):
        ember.load(io.BytesIO(_craft(make("float32"), grow)))

    def neg(d):
        d["tensors"][0]["stride"] = [-1, 1]

    with pytest.raises(CheckpointError):
        ember.load(io.BytesIO(_craft(make("float32"), neg)))


# ----------------------------------------------------------------------------
# damaged and foreign files

@pytest.fixture
def small_ckpt(tmp_path, fmt):
    obj = {"w": make("float32", (4, 4)), "b": make("bfloat16", (3,)), "meta": [1, "x"]}
    p = tmp_path / "small.pt"
    ember.save(obj, p, format=fmt)
    return obj, p


def test_every_truncation_is_a_clear_error(small_ckpt, tmp_path):
    obj, p = small_ckpt
    data = p.read_bytes()
    for n in range(len(data)):
        with pytest.raises(CheckpointError, match="<BytesIO object>"):
            ember.load(io.BytesIO(data[:n]))
    q = tmp_path / "cut.pt"
    for n in (1, 30, 100, len(data) - 22, len(data) - 1):
        q.write_bytes(data[:n])
        with pytest.raises(CheckpointError, match="cut.pt"):
            ember.load(q)
    q.write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        ember.load(q)
    q.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated"):
        ember.load(q)


def test_every_bit_flip_is_caught_or_harmless(small_ckpt):
    obj, p = small_ckpt
    data = bytearray(p.read_bytes())
    caught = harmless = 0
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 1 << (i % 8)
        try:
            r = ember.load(io.BytesIO(bytes(bad)))
        except CheckpointError as e:
            assert "<BytesIO object>" in str(e)
            caught += 1
            continue
        same(obj["w"], r["w"])                   # loaded: then it must be the right data
        same(obj["b"], r["b"])
        assert r["meta"] == obj["meta"]
        harmless += 1
    assert caught > len(data) // 3      # the rest: zip padding and members load never reads


def test_crc_mismatch_names_the_member(small_ckpt, fmt):
    obj, p = small_ckpt
    data = bytearray(p.read_bytes())
    ar = _io.Archive(open(p, "rb"), "x")
    off = ar.data_offset(STORAGE[fmt] + "0")
    data[off + 5] ^= 0x10
    p.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"CRC-32 mismatch in member '{STORAGE[fmt]}0'"):
        ember.load(p)
    ember.load(p, mmap=True)                      # mmap skips data CRCs (documented)


def test_threaded_crc_paths(monkeypatch, tmp_path, fmt):
    from ember._serialization import _crc

    monkeypatch.setattr(_crc, "SMALL", 64)          # every storage takes the threaded path
    monkeypatch.setattr(_crc, "CHUNK", 96)
    monkeypatch.setattr(_crc, "_OP", None)
    obj = {f"t{i}": make("float64", (n,), seed=i) for i, n in enumerate((1, 12, 100, 1000))}
    p = tmp_path / "c.pt"
    ember.save(obj, p, format=fmt)
    assert zipfile.ZipFile(p).testzip() is None     # the folded CRCs are zip's CRCs
    r = ember.load(p)
    for k in obj:
        same(obj[k], r[k])
    data = bytearray(p.read_bytes())
    ar = _io.Archive(open(p, "rb"), "x")
    off = ar.data_offset(STORAGE[fmt] + "3")
    data[off + 7000] ^= 0x01
    p.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"CRC-32 mismatch in member '{STORAGE[fmt]}3'"):
        ember.load(p)


def test_foreign_files(tmp_path):
    q = tmp_path / "f.bin"
    cases = [
        (b"hello world, not a checkpoint", "not a zip archive"),
        (pickle.dumps({"a": 1}, protocol=2), "legacy PyTorch"),
        (b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}        ", "safetensors"),
    ]
    for raw, match in cases:
        q.write_bytes(raw)
        with pytest.raises(CheckpointError, match=match) as ei:
            ember.load(q)
        assert "f.bin" in str(ei.value)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", "hi")
    q.write_bytes(buf.getvalue())
    with pytest.raises(CheckpointError, match="neither an ember checkpoint nor a PyTorch"):
        ember.load(q)


def test_newer_format_version_names_the_ember_needed():
    def header(d):
        d["format_version"] = 99
        d["requires_ember"] = "7.1.0"
        d["ember_version"] = "7.2.0"

    data = _craft({"x": 1}, header)
    with pytest.raises(CheckpointError, match=r"upgrade to ember >= 7\.1\.0"):
        ember.load(io.BytesIO(data))


# ----------------------------------------------------------------------------
# atomic saves

def test_exception_mid_save_keeps_previous_file(tmp_path, monkeypatch, fmt):
    p = tmp_path / "c.pt"
    ember.save({"v": 1}, p, format=fmt)
    real_add = _io.ZipWriter.add

    def failing_add(self, name, *a, **k):
        if name.startswith(STORAGE[fmt] + "1"):
            raise OSError("disk full (simulated)")
        return real_add(self, name, *a, **k)

    monkeypatch.setattr(_io.ZipWriter, "add", failing_add)
    with pytest.raises(OSError, match="disk full"):
        ember.save({"v": 2, "a": make("float32"), "b": make("float64")}, p, format=fmt)
    assert ember.load(p) == {"v": 1}
    assert os.listdir(tmp_path) == ["c.pt"]                  # the temp file is gone
    with pytest.raises((TypeError, AttributeError, pickle.PicklingError)):   # unpicklable
        ember.save({"v": 3, "f": lambda: 0}, p, format=fmt)
    assert ember.load(p) == {"v": 1}


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes and symlinks")
def test_atomic_save_keeps_mode_and_writes_through_symlinks(tmp_path):
    target = tmp_path / "real.pt"
    ember.save({"v": 1}, target)
    os.chmod(target, 0o600)
    link = tmp_path / "link.pt"
    link.symlink_to(target)
    ember.save({"v": 2}, link)
    assert link.is_symlink() and ember.load(target) == {"v": 2}
    assert (os.stat(target).st_mode & 0o777) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["link.pt", "real.pt"]


CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import ember
    from ember._serialization import _io

    path, mode = sys.argv[1], sys.argv[2]
    if mode == "stall":
        orig = _io._open_temp

        class Stall:
            def __init__(self, f):
                self.f, self.n = f, 0
            def write(self, b):
                r = self.f.write(b)
                self.n += memoryview(b).nbytes
                if self.n > (1 << 20):
                    self.f.flush()
                    print("MIDSAVE", flush=True)
                    time.sleep(120)
                return r
            def __getattr__(self, k):
                return getattr(self.f, k)
            def __enter__(self):
                return self
            def __exit__(self, *a):
                return self.f.__exit__(*a)

        def stall_open(final):
            f, tmp = orig(final)
            return Stall(f), tmp
        _io._open_temp = stall_open
        ember.save({"version": 2, "w": ember.from_numpy(np.full((1 << 22,), 2, np.float32))},
                   path)
    else:
        print("GO", flush=True)
        k = 2
        while True:
            ember.save({"version": k,
                        "w": ember.from_numpy(np.full((1 << 22,), k, np.float32))}, path)
            k += 1
""")


def _child(path, mode):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path), mode],
                            stdout=subprocess.PIPE, env=env, cwd=ROOT)


def _check_consistent(p, allowed):
    r = ember.load(p)
    assert r["version"] in allowed
    w = np.array(r["w"])
    assert (w == r["version"]).all()
    return r["version"]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_mid_save_keeps_previous_file(tmp_path):
    p = tmp_path / "model.pt"
    ember.save({"version": 1, "w": ember.from_numpy(np.full((1 << 22,), 1, np.float32))}, p)
    proc = _child(p, "stall")
    try:
        assert proc.stdout.readline().strip() == b"MIDSAVE"      # 1 MiB of 16 MiB written
        tmps = [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
        assert len(tmps) == 1 and os.path.getsize(tmp_path / tmps[0]) > 0
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert _check_consistent(p, {1}) == 1


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_at_random_moments_file_is_always_whole(tmp_path):
    p = tmp_path / "model.pt"
    ember.save({"version": 1, "w": ember.from_numpy(np.full((1 << 22,), 1, np.float32))}, p)
    rng = random.Random(0)
    for _ in range(3):
        proc = _child(p, "loop")
        try:
            assert proc.stdout.readline().strip() == b"GO"
            time.sleep(rng.uniform(0.05, 0.4))
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
        _check_consistent(p, set(range(1, 10000)))


# ----------------------------------------------------------------------------
# safetensors

def test_safetensors_round_trip(tmp_path):
    tensors = {d: make(d, (3, 5), seed=i) for i, d in enumerate(DTYPES)}
    tensors["empty"] = ember.empty(0, 4)
    tensors["scalar"] = ember.tensor(2.5)
    tensors["strided"] = make("float32", (6, 4)).t()
    p = tmp_path / "m.safetensors"
    S.save_safetensors(tensors, p, metadata={"format": "pt", "step": "10"})
    assert S.safetensors_metadata(p) == {"format": "pt", "step": "10"}
    for kw in ({}, {"mmap": True}):
        r = S.load_safetensors(p, **kw)
        assert set(r) == set(tensors)
        for k, t in tensors.items():
            same(t, r[k])
    buf = io.BytesIO()
    S.save_safetensors(tensors, buf)
    r = S.load_safetensors(buf.getvalue())
    same(tensors["bfloat16"], r["bfloat16"])
    assert S.safetensors_metadata(io.BytesIO(buf.getvalue())) == {}


def test_safetensors_errors(tmp_path):
    p = tmp_path / "m.safetensors"
    S.save_safetensors({"a": make("float32")}, p)
    data = p.read_bytes()
    for bad, match in [(data[:4], "truncated"), (data[:-4], "outside the data"),
                       (b"\xff" * 8 + data[8:], "header length"), (b"", "empty"),
                       (data[:8] + b"[" + data[9:], "not valid JSON")]:
        p.write_bytes(bad)
        with pytest.raises(CheckpointError, match=match):
            S.load_safetensors(p)
    with pytest.raises(TypeError):
        S.save_safetensors({"a": 1}, io.BytesIO())
    with pytest.raises(TypeError):
        S.save_safetensors({"a": make("float32")}, io.BytesIO(), metadata={"a": 1})


def test_safetensors_package_interop(tmp_path):
    st_np = pytest.importorskip("safetensors.numpy")
    arrays = {"f32": np.arange(12, dtype=np.float32).reshape(3, 4),
              "i64": np.arange(5, dtype=np.int64), "u8": np.arange(7, dtype=np.uint8),
              "b": np.array([True, False]), "f16": np.ones((2, 2), np.float16),
              "e": np.zeros((0, 3), np.float64)}
    p = tmp_path / "theirs.safetensors"
    st_np.save_file(arrays, str(p), metadata={"k": "v"})
    r = S.load_safetensors(p)
    for k, a in arrays.items():
        np.testing.assert_array_equal(np.array(r[k]), a)
    assert S.safetensors_metadata(p) == {"k": "v"}
    q = tmp_path / "ours.safetensors"
    S.save_safetensors({k: ember.from_numpy(a) for k, a in arrays.items()}, q,
                       metadata={"k": "v"})
    back = st_np.load_file(str(q))
    for k, a in arrays.items():
        np.testing.assert_array_equal(back[k], a)
        assert back[k].dtype == a.dtype


# ----------------------------------------------------------------------------
# the front door stays light

def test_import_ember_does_not_load_serialization_machinery():
    code = ("import sys, ember; print(sorted(m for m in ('zipfile', 'json', 'pickle', "
            "'ctypes', 'ember._serialization._io') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"
    assert ember.save is S.save and ember.load is S.load
    assert "save" in ember.__all__ and "load" in ember.__all__
