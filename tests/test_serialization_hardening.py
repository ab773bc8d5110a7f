"""Loading files that are not trusted: crafted pickles cannot steer ``weights_only=True``
(BUILD on classes, REDUCE of builtins), declared sizes cannot make the loader allocate
more than the archive holds, deep nesting is a CheckpointError, and a few hundred
seeded mutations of valid files end in the documented exceptions only (in a child
process, so a crash would show as a signal).  Also: temporaries of killed saves are
cleaned by the next save to the same path, and nothing else is."""
import io
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

import ember
from ember import serialization as S
from ember._serialization import CheckpointError, _ember, _io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OK_ERRORS = (CheckpointError, pickle.UnpicklingError)


# ----------------------------------------------------------------------------
# a tiny pickle assembler (protocol 2 opcodes, as torch.save writes them)

def G(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def U(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def Int(n):
    if -2**31 <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    b = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(b)]) + b


def T(*parts):
    return b"(" + b"".join(parts) + b"t"


def tensor_op(key="0", numel=6, shape=(2, 3), stride=(3, 1), storage="FloatStorage", offset=0):
    pid = T(U("storage"), G("torch", storage), U(key), U("cpu"), Int(numel)) + b"Q"
    hooks = G("collections", "OrderedDict") + b")R"
    return (G("torch._utils", "_rebuild_tensor_v2")
            + T(pid, Int(offset), T(*map(Int, shape)), T(*map(Int, stride)), b"\x89", hooks) + b"R")


def pkl(body):
    return b"\x80\x02" + body + b"."


def torch_zip(data_pkl, storages=None, compress=False):
    """A PyTorch-layout archive around a hand-made pickle."""
    if storages is None:
        storages = {"0": np.arange(6, dtype=np.float32).tobytes()}
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", method) as zf:
        zf.writestr("archive/data.pkl", data_pkl)
        zf.writestr("archive/byteorder", "little")
        for k, v in storages.items():
            zf.writestr(f"archive/data/{k}", v)
        zf.writestr("archive/version", "3\n")
    return buf.getvalue()


def save_bytes(obj, fmt):
    buf = io.BytesIO()
    ember.save(obj, buf, format=fmt)
    return buf.getvalue()


def load_bytes(data, **kw):
    return ember.load(io.BytesIO(data), **kw)


def ember_with_objects(body):
    """An ember-format checkpoint whose objects member is a list of what ``body`` builds."""
    class Box:
        pass

    zf = zipfile.ZipFile(io.BytesIO(save_bytes({"x": 1}, "ember")))
    out = io.BytesIO()
    zw = _io.ZipWriter(out)
    for name in zf.namelist():
        raw = zf.read(name)
        if name == _ember.DATA:
            d = json.loads(raw)
            d["objects"] = ["x.Box"]
            d["root"] = {"T": "pickle", "v": 0, "type": "x.Box"}
            raw = json.dumps(d).encode()
        zw.add(name, raw)
    zw.add(_ember.OBJECTS, pkl(b"]" + body + b"a"))
    zw.close()
    return out.getvalue()


def sample_tensor():
    return load_bytes(torch_zip(pkl(tensor_op())))


def test_the_hand_made_torch_file_loads():
    t = sample_tensor()
    np.testing.assert_array_equal(np.array(t), np.arange(6, dtype=np.float32).reshape(2, 3))


# ----------------------------------------------------------------------------
# BUILD and REDUCE cannot be steered

SIZE_PATCH = pkl(G("torch", "Size") + b"N}" + U("__len__") + G("builtins", "int") + b"s\x86b")


def test_build_cannot_patch_an_allowed_class():
    with pytest.raises(pickle.UnpicklingError, match="sets attributes on the class"):
        load_bytes(torch_zip(SIZE_PATCH))
    assert len(ember.ones(2, 3).shape) == 2
    assert "__len__" not in ember.Size.__dict__


def test_build_cannot_patch_a_tensor_or_a_function():
    # the rebuilt tensor itself, and an allowed reconstructor function
    for target in (tensor_op(), G("collections", "OrderedDict")):
        body = target + b"}" + U("x") + Int(1) + b"sb"
        with pytest.raises(pickle.UnpicklingError, match="sets attributes"):
            load_bytes(torch_zip(pkl(body)))


class Allowed:
    def __init__(self):
        self.a = 1


def test_build_on_instances_of_an_allowed_class_only():
    name = f"{Allowed.__module__}"
    inst = G(name, "Allowed") + b")\x81" + b"}" + U("a") + Int(7) + b"sb"
    patch_class = G(name, "Allowed") + b"N}" + U("a") + Int(7) + b"s\x86b"
    for wrap in (lambda b: torch_zip(pkl(b)), ember_with_objects):
        with S.safe_globals([Allowed]):
            assert load_bytes(wrap(inst)).a == 7
            with pytest.raises(pickle.UnpicklingError, match="sets attributes on the class"):
                load_bytes(wrap(patch_class))
        assert not hasattr(Allowed, "a")
        with pytest.raises(pickle.UnpicklingError, match="Allowed"):
            load_bytes(wrap(inst))                            # not allowed any more


def test_ordered_dict_attributes_still_load():
    body = (G("collections", "OrderedDict") + b")R" + b"}" + U("_metadata") + b"}" + U("")
            + b"}" + U("version") + Int(1) + b"sss" + b"b")
    r = load_bytes(torch_zip(pkl(body)))
    assert r._metadata == {"": {"version": 1}}


@pytest.mark.parametrize("body,what", [
    (G("builtins", "list") + T(G("builtins", "range") + T(Int(10**8)) + b"R") + b"R",
     "builtins.list"),
    (G("builtins", "getattr") + T(G("torch", "Size"), U("__len__")) + b"R", "getattr"),
    (G("builtins", "eval") + T(U("1")) + b"R", "eval"),
    (G("builtins", "int") + T(U("9" * 10)) + b"R", "builtins.int"),
    (G("builtins", "tuple") + T(U("x")) + b"R", "builtins.tuple"),
    (G("builtins", "str") + b")\x81", "builtins.str"),
], ids=["list-range", "getattr", "eval", "int", "tuple", "newobj-str"])
def test_reduce_calls_reconstructors_only(body, what):
    for data in (torch_zip(pkl(body)), ember_with_objects(body)):
        with pytest.raises(pickle.UnpicklingError, match=what):
            load_bytes(data)


@pytest.mark.parametrize("body", [
    G("builtins", "set") + T(G("builtins", "range") + T(Int(10**9)) + b"R") + b"R",
    G("builtins", "frozenset") + T(G("builtins", "range") + T(Int(10**9)) + b"R") + b"R",
    G("builtins", "bytearray") + T(Int(10**9)) + b"R",
    G("torch", "Size") + T(G("builtins", "range") + T(Int(10**9)) + b"R") + b"R",
    G("collections", "OrderedDict") + T(G("builtins", "range") + T(Int(10**9)) + b"R") + b"R",
    G("collections", "defaultdict") + T(G("torch._utils", "_rebuild_tensor_v2")) + b"R",
], ids=["set", "frozenset", "bytearray", "size", "odict", "defaultdict"])
def test_allowed_reconstructors_take_concrete_data_only(body):
    with pytest.raises(CheckpointError, match="malformed"):
        load_bytes(torch_zip(pkl(body)))


def test_allowed_reconstructors_rebuild_their_values():
    body = (b"(" + G("builtins", "set") + T(b"](" + Int(1) + Int(2) + b"e") + b"R"
            + G("_codecs", "encode") + T(U("ab"), U("latin1")) + b"R"
            + G("builtins", "complex") + T(b"G" + struct.pack(">d", 1.5),
                                           b"G" + struct.pack(">d", -2.0)) + b"R"
            + G("torch", "Size") + T(T(Int(2), Int(3))) + b"R" + b"t")
    r = load_bytes(torch_zip(pkl(body)))
    assert r == ({1, 2}, b"ab", complex(1.5, -2.0), (2, 3))
    assert type(r[3]) is ember.Size


def test_torch_refuses_the_same_files(tmp_path):
    torch = pytest.importorskip("torch")
    for body in (SIZE_PATCH[2:-1],
                 G("builtins", "list") + T(G("builtins", "range") + T(Int(10)) + b"R") + b"R"):
        p = tmp_path / "evil.pt"
        p.write_bytes(torch_zip(pkl(body)))
        with pytest.raises(pickle.UnpicklingError):
            torch.load(p, weights_only=True)
        with pytest.raises(pickle.UnpicklingError):
            ember.load(p)


# ----------------------------------------------------------------------------
# what a file can make the loader allocate

def test_declared_storage_larger_than_its_member():
    data = torch_zip(pkl(tensor_op(numel=1 << 60, shape=(2, 3))))
    with pytest.raises(CheckpointError, match="holds 24 bytes, the pickle expects"):
        load_bytes(data)


def test_view_past_its_storage_and_huge_sizes():
    for shape, stride in [((2, 100), (3, 1)), ((1 << 62, 2), (1, 1)), ((2, 3), (1 << 62, 1)),
                          ((2, -3), (3, 1)), ((0, 1 << 64), (1, 1))]:
        with pytest.raises(CheckpointError):
            load_bytes(torch_zip(pkl(tensor_op(shape=shape, stride=stride))))


def _raw_zip(members):
    """A zip written by hand: (name, payload, method, declared size, crc) per member, so
    headers may lie about sizes."""
    out, central = bytearray(), bytearray()
    for name, payload, method, size, crc in members:
        nb = name.encode()
        off = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 33, crc,
                           len(payload), size, len(nb), 0) + nb + payload
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 33, crc,
                               len(payload), size, len(nb), 0, 0, 0, 0, 0, off) + nb
    n = len(members)
    return bytes(out + central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(central),
                                             len(out), 0))


def _deflate(b):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(b) + c.flush()


def test_zip_bomb_member_is_refused_before_allocating():
    stream = _deflate(bytes(1 << 20))                 # 1 MiB of zeros: ~1 KiB compressed
    size = 0xFFFFFFF0                                 # declares 4 GiB
    body = pkl(tensor_op(numel=size // 4, shape=(size // 4,), stride=(1,)))
    data = _raw_zip([("archive/data.pkl", body, 0, len(body), zlib.crc32(body)),
                     ("archive/data/0", stream, 8, size, zlib.crc32(bytes(1 << 20)))])
    with pytest.raises(CheckpointError, match="more than deflate can produce"):
        load_bytes(data)


def test_compressed_member_never_yields_more_than_declared():
    # the stream inflates to 4 MiB, its header says 64 KiB: 64 KiB are read, then the CRC fails
    n = 1 << 16
    stream = _deflate(bytes(4 << 20))
    body = pkl(tensor_op(numel=n // 4, shape=(n // 4,), stride=(1,)))
    data = _raw_zip([("archive/data.pkl", body, 0, len(body), zlib.crc32(body)),
                     ("archive/data/0", stream, 8, n, 12345)])
    with pytest.raises(CheckpointError, match="CRC-32 mismatch"):
        load_bytes(data)
    ok = _raw_zip([("archive/data.pkl", body, 0, len(body), zlib.crc32(body)),
                   ("archive/data/0", stream, 8, n, zlib.crc32(bytes(n)))])
    t = load_bytes(ok)
    assert t.shape == (n // 4,) and not np.array(t).any()
    short = _raw_zip([("archive/data.pkl", body, 0, len(body), zlib.crc32(body)),
                      ("archive/data/0", _deflate(np.random.default_rng(0).bytes(1000)), 8, n,
                       zlib.crc32(bytes(n)))])
    with pytest.raises(CheckpointError, match="CRC-32 mismatch|cut short|damaged"):
        load_bytes(short)


def test_compressed_storage_is_inflated_in_pieces():
    n = 32 << 20
    a = np.random.default_rng(0).integers(0, 4, n // 4, dtype=np.int32)
    body = pkl(tensor_op(numel=n // 4, shape=(n // 4,), stride=(1,), storage="IntStorage"))
    data = torch_zip(body, {"0": a.tobytes()}, compress=True)
    tracemalloc.start()
    try:
        t = load_bytes(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(np.array(t), a)
    assert peak < n // 4             # Python-side buffers: pieces, not a copy of the member


def test_other_compression_methods_are_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as zf:
        zf.writestr("archive/data.pkl", pkl(b"N"))
    with pytest.raises(CheckpointError, match="compression method 12"):
        load_bytes(buf.getvalue())


# ----------------------------------------------------------------------------
# deep nesting

DEEP = 10_000


def test_deep_lists_in_a_pickle():
    body = b"]" * DEEP + b"a" * (DEEP - 1)
    for data in (torch_zip(pkl(body)), ember_with_objects(body)):
        with pytest.raises(CheckpointError, match="nested more than 1000 deep"):
            load_bytes(data)


def test_deep_tuples_and_dicts_in_a_pickle():
    tuples = b"(" * DEEP + b"N" + b"t" * DEEP
    dicts = (b"}" + U("k")) * DEEP + b"N" + b"s" * DEEP
    for body in (tuples, dicts):
        with pytest.raises(CheckpointError, match="nested more than"):
            load_bytes(torch_zip(pkl(body)))


def test_deep_nesting_built_through_the_memo():
    # lists nested after they were created (memo + APPEND): the depth check still sees it
    n = 3000
    body = b"".join(b"]r" + struct.pack("<I", i) for i in range(n)) + b"0" * n
    body += b"".join(b"j" + struct.pack("<I", i) + b"j" + struct.pack("<I", i + 1) + b"a0"
                     for i in range(n - 1))
    body += b"j" + struct.pack("<I", 0)
    with pytest.raises(CheckpointError, match="nested more than"):
        load_bytes(torch_zip(pkl(body)))


def test_nesting_within_the_limit_loads():
    body = b"]" * 500 + b"a" * 499
    x = load_bytes(torch_zip(pkl(body)))
    for _ in range(499):
        assert len(x) == 1
        x = x[0]
    assert x == []


def test_deep_json_in_ember_and_safetensors_files():
    zf = zipfile.ZipFile(io.BytesIO(save_bytes({"x": 1}, "ember")))
    out = io.BytesIO()
    zw = _io.ZipWriter(out)
    for name in zf.namelist():
        raw = zf.read(name)
        if name == _ember.DATA:
            raw = raw.replace(b'"root":', b'"root":' + b"[" * DEEP + b"]" * DEEP + b',"x":', 1)
        zw.add(name, raw)
    zw.close()
    with pytest.raises(CheckpointError, match="malformed"):
        load_bytes(out.getvalue())
    h = b'{"a":' + b"[" * DEEP + b"]" * DEEP + b"}"
    h += b" " * (-len(h) % 8)
    with pytest.raises(CheckpointError, match="not valid JSON"):
        S.load_safetensors(struct.pack("<Q", len(h)) + h)


# ----------------------------------------------------------------------------
# seeded mutations: only the documented exceptions, never a signal

SWEEP = textwrap.dedent("""
    import io, json, pickle, random, sys, zipfile, collections
    import numpy as np
    import ember
    from ember import serialization as S
    from ember._serialization import CheckpointError, _io

    samples = json.loads(sys.argv[1])
    samples = {k: bytes.fromhex(v) for k, v in samples.items()}
    rng = random.Random(1234)
    counts = collections.Counter()

    def rezip(data, member, edit):
        zf = zipfile.ZipFile(io.BytesIO(data))
        out = io.BytesIO()
        zw = _io.ZipWriter(out)
        for name in zf.namelist():
            raw = zf.read(name)
            zw.add(name, edit(raw) if name.endswith(member) else raw)
        zw.close()
        return out.getvalue()

    def mutate(b):
        b = bytearray(b)
        for _ in range(rng.randint(1, 4)):
            kind = rng.random()
            i = rng.randrange(len(b))
            if kind < 0.6:
                b[i] = rng.randrange(256)
            elif kind < 0.8:
                del b[i:i + rng.randint(1, 8)]
            else:
                b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        return bytes(b)

    def attempt(tag, data, load=ember.load):
        try:
            load(io.BytesIO(data))
            counts[tag + ":loaded"] += 1
        except (CheckpointError, pickle.UnpicklingError):
            counts[tag + ":refused"] += 1
        except Exception as e:
            counts[tag + ":OTHER"] += 1
            print("OTHER", tag, type(e).__name__, str(e)[:200], flush=True)

    st = samples.pop("safetensors")
    for n in range(0, len(st), max(1, len(st) // 60)):
        attempt("st-truncated", st[:n], S.load_safetensors)
    for _ in range(150):
        attempt("st-bytes", mutate(st), S.load_safetensors)
    for name, data in samples.items():
        for n in range(0, len(data), max(1, len(data) // 60)):
            attempt("truncated", data[:n])
        for _ in range(150):
            attempt("bytes", mutate(data))
        member = "data.pkl" if name.startswith("torch") else "data.json"
        for _ in range(150):
            attempt(member, rezip(data, member, mutate))
    print("COUNTS", json.dumps(counts), flush=True)
""")


def _samples():
    t = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    obj = {"w": t, "v": t[1:, ::2], "b": ember.ones(3, dtype=ember.bfloat16),
           "n": [1, 2.5, "x", (None, True)], "i": ember.arange(4)}
    out = {"torch_hand": torch_zip(pkl(b"}(" + U("w") + tensor_op() + U("n") + b"]" + Int(3)
                                       + b"au"))}
    for fmt in ("ember", "torch"):
        out[f"{fmt}_save"] = save_bytes(obj, fmt)
    buf = io.BytesIO()
    S.save_safetensors({k: obj[k] for k in ("w", "b", "i")}, buf, metadata={"a": "b"})
    out["safetensors"] = buf.getvalue()
    return out


def test_seeded_mutations_end_in_documented_errors():
    samples = _samples()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", SWEEP,
                           json.dumps({k: v.hex() for k, v in samples.items()})],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, f"signal/exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert "OTHER" not in proc.stdout, proc.stdout[-3000:]
    line = next(s for s in proc.stdout.splitlines() if s.startswith("COUNTS"))
    counts = json.loads(line[len("COUNTS "):])
    total = sum(counts.values())
    refused = sum(v for k, v in counts.items() if k.endswith(":refused"))
    assert total >= 300 * (len(samples) - 1) and refused > total // 2, counts
    assert counts.get("st-bytes:refused", 0) > 0 and counts.get("data.pkl:refused", 0) > 0


# ----------------------------------------------------------------------------
# temporaries of killed saves

CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import ember
    from ember._serialization import _io

    path = sys.argv[1]
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

    def stall_open(final):
        f, tmp = orig(final)
        return Stall(f), tmp

    _io._open_temp = stall_open
    ember.save({"w": ember.from_numpy(np.full((1 << 20,), 2, np.float32))}, path)
""")


def _stalled_child(path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE,
                            env=env, cwd=ROOT)
    assert proc.stdout.readline().strip() == b"MIDSAVE"
    return proc


def _temps(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".tmp"))


@pytest.mark.skipif(not hasattr(signal, "SIGKILL") or sys.platform == "win32",
                    reason="needs SIGKILL and flock")
def test_next_save_removes_temporaries_of_killed_saves_only(tmp_path):
    p = tmp_path / "model.pt"
    ember.save({"v": 1}, p)
    # files that only look alike, and another target's temporary: never touched
    keep = [".model.pt.0123456789ab.tmp", ".model.pt.ember-save-0123456789ag.tmp",
            ".model.pt.ember-save-0123456789ab.tmp.bak", "model.pt.ember-save-0123456789ab.tmp",
            ".other.pt.ember-save-0123456789ab.tmp"]
    for name in keep:
        (tmp_path / name).write_bytes(b"user data")
    proc = _stalled_child(p)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stale = [f for f in _temps(tmp_path) if f not in keep]
    assert len(stale) == 1 and os.path.getsize(tmp_path / stale[0]) > 0

    live = _stalled_child(p)                  # its save removed the stale one, kept its own
    try:
        in_use = [f for f in _temps(tmp_path) if f not in keep]
        assert len(in_use) == 1 and in_use != stale
        ember.save({"v": 2}, p)               # a save in progress keeps its temporary
        assert [f for f in _temps(tmp_path) if f not in keep] == in_use
        assert ember.load(p) == {"v": 2}
    finally:
        live.kill()
        live.wait()
    ember.save({"v": 3}, p)
    assert _temps(tmp_path) == sorted(k for k in keep if k.endswith(".tmp"))
    for name in keep:
        assert (tmp_path / name).read_bytes() == b"user data"
    assert ember.load(p) == {"v": 3}


def test_stale_cleanup_leaves_a_locked_temporary(tmp_path):
    pytest.importorskip("fcntl")
    final = str(tmp_path / "m.pt")
    f, tmp = _io._open_temp(final)
    try:
        assert _io.remove_stale_temps(final) == []
        assert os.path.exists(tmp)
    finally:
        f.close()
    assert _io.remove_stale_temps(final) == [tmp]
    assert not os.path.exists(tmp)
