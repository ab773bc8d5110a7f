"""The elementwise op lists (src_c/include/ember_ew_ops.h) are the one source of the op
codes, the kernel tables and the generated bindings: every registry that still names an
op by hand must agree with them, and every dtype a line declares must really run."""
import pathlib
import re

import numpy as np
import pytest

import ember
from ember import _ops
from ember._C import elementwise as ew
from ember.autograd import _table

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEADER = ROOT / "src_c" / "include" / "ember_ew_ops.h"
LISTS = {"binary": "EW_BINARY_OPS", "compare": "EW_COMPARE_OPS", "unary": "EW_UNARY_OPS",
         "predicate": "EW_PREDICATE_OPS"}
KINDS = ["ARITH", "DIV", "CMP", "INT", "FLOAT"]      # ember_ew.h's EW_K_* order
DTYPES = {"FLOATS": ["float32", "float64"], "INTS": ["uint8", "int8", "int16", "int32", "int64"]}
DTYPES["NUM"] = DTYPES["INTS"] + DTYPES["FLOATS"]
DTYPES["INTS_B"] = DTYPES["INTS"] + ["bool"]
DTYPES["NUM_B"] = DTYPES["NUM"] + ["bool"]


def _split_args(text):
    """Top-level comma split of one X(...) line's arguments."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    return out + [cur.strip()]


def _parse():
    src = HEADER.read_text().replace("\\\n", " ")
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    lists = {}
    for group, macro in LISTS.items():
        body = re.search(rf"#define {macro}\(X\)(.*?)(?=#define|#endif)", src, re.S).group(1)
        lines = []
        i = 0
        while True:
            i = body.find("X(", i)
            if i < 0:
                break
            depth, j = 0, i + 1
            while True:
                depth += body[j] == "("
                depth -= body[j] == ")"
                j += 1
                if depth == 0:
                    break
            lines.append(_split_args(body[i + 2:j - 1]))
            i = j
        lists[group] = lines
    return lists


PARSED = _parse()
C_LISTS = ew._op_lists()
PUBLIC = [(g, a) for g, lines in PARSED.items() for a in lines if a[2] != '""']
NN_ONLY = {"hardsigmoid", "hardswish"}      # torch has them in nn.functional only


def _lines(*groups):
    return [(g, a) for g, a in PUBLIC if g in groups]


def test_header_and_compiled_lists_agree():
    # the op codes Cython sees are the header lines' positions, with the same names/kinds
    for group, lines in PARSED.items():
        compiled = C_LISTS[group]
        assert len(compiled) == len(lines), group
        for code, (args, (name, op, kind)) in enumerate(zip(lines, compiled)):
            assert op == code
            assert name == args[2].strip('"'), (group, args[0])
            if group in ("binary", "unary"):
                assert KINDS[kind] == args[3], (group, args[0])
                assert args[4] in DTYPES and args[5] in ("ALL", "F2", "OWN"), args[0]
            else:
                assert KINDS[kind] == "CMP"


def test_codes_named_by_cython_exist_in_the_lists():
    pxd = (ROOT / "ember" / "_C" / "c_ew.pxd").read_text()
    codes = {"EW_" + a[0] for lines in PARSED.values() for a in lines}
    named = set(re.findall(r"\bEW_[A-Z0-9_]+", pxd))
    named -= {"EW_NBIN", "EW_NCMP", "EW_NUN", "EW_NPRED", "EW_G_BIN", "EW_G_CMP", "EW_G_UN",
              "EW_G_PRED", "EW_K_ARITH", "EW_K_DIV", "EW_K_CMP", "EW_K_INT", "EW_K_FLOAT"}
    assert named <= codes, named - codes
    # a generated op needs no declaration of its own
    for _, a in PUBLIC:
        if a[0] not in ("ABS", "SIGN", "NEG", "FRAC", "RELU", "FLOORDIV", "FMOD"):
            assert "EW_" + a[0] not in named, a[0]


@pytest.mark.parametrize("group,args", PUBLIC, ids=[a[0] for _, a in PUBLIC])
def test_each_public_line_is_bound_declared_and_tested(group, args):
    name = args[2].strip('"')
    assert callable(getattr(ew, name)) and getattr(ew, name).__name__ == name
    if group != "predicate":
        assert callable(getattr(ew, name + "_"))
    if name in NN_ONLY:
        import ember.nn.functional as F
        assert getattr(F, name)(ember.tensor([1.0]), inplace=True) is not None
        return
    # declared in the op table, so ember.<name> is that binding
    assert re.search(rf"^{name}\s", _ops._TABLE, re.M), f"{name} is not in ember/_ops.py"
    assert getattr(ember, name) is getattr(ew, name)
    # differentiable float math has a backward formula
    if group in ("binary", "unary") and args[3] in ("FLOAT", "DIV") and name not in (
            "fmax", "fmin") or name in ("neg", "abs", "relu", "square", "maximum", "minimum"):
        _table._load()
        assert name in _table.FORMULAS, f"no backward formula for {name}"


@pytest.mark.parametrize("group,args", _lines("unary", "predicate"),
                         ids=[a[0] for _, a in _lines("unary", "predicate")])
def test_every_declared_dtype_runs_like_torch_unary(group, args):
    torch = pytest.importorskip("torch")
    name = args[2].strip('"')
    dts = DTYPES[args[4]] if group == "unary" else DTYPES["NUM_B"]
    rng = np.random.default_rng(1)
    for dt in dts:
        if dt == "bool":
            a = rng.random(7) > 0.5
        elif np.dtype(dt).kind in "iu":
            a = rng.integers(0 if dt == "uint8" else -4, 5, 7).astype(dt)
        else:
            a = rng.uniform(0.1, 0.9, 7).astype(dt)      # inside every op's domain
        _compare(torch, name, (a,), dt)


def _compare(torch, name, arrays, dt):
    """ember's op against torch's on the same arrays: the same result, or the same error."""
    fe = getattr(ember, name, None) or getattr(ember.nn.functional, name)
    ft = getattr(torch, name, None) or getattr(torch.nn.functional, name)
    try:
        want = ft(*[torch.tensor(a) for a in arrays])
    except Exception as e:      # torch refuses this dtype: ember must refuse it alike
        with pytest.raises(type(e)):
            fe(*[ember.tensor(a) for a in arrays])
        return
    got = fe(*[ember.tensor(a) for a in arrays])
    assert str(got.dtype) == str(want.dtype).replace("torch.", "ember."), (name, dt)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, atol=1e-7,
                               err_msg=f"{name} {dt}")


@pytest.mark.parametrize("group,args", _lines("binary", "compare"),
                         ids=[a[0] for _, a in _lines("binary", "compare")])
def test_every_declared_dtype_runs_like_torch_binary(group, args):
    torch = pytest.importorskip("torch")
    name = args[2].strip('"')
    dts = DTYPES[args[4]] if group == "binary" else DTYPES["NUM_B"]
    rng = np.random.default_rng(2)
    for dt in dts:
        if dt == "bool":
            a, b = rng.random(7) > 0.5, rng.random(7) > 0.5
        elif np.dtype(dt).kind in "iu":
            a = rng.integers(0 if dt == "uint8" else -4, 5, 7).astype(dt)
            b = rng.integers(1, 4, 7).astype(dt)      # no zero divisor, small shifts
        else:
            a, b = rng.uniform(0.1, 2, 7).astype(dt), rng.uniform(0.1, 2, 7).astype(dt)
        _compare(torch, name, (a, b), dt)
