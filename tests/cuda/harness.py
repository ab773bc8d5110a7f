"""Helpers of the device tests: move NumPy arrays to and from device memory
(ember's caching allocator), build emc_nd descriptors, read the C enums."""

import ctypes
import os
import re

import numpy as np

import ember
import ember.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EM = {"bool": 0, "uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float16": 6,
      "bfloat16": 7, "float32": 8, "float64": 9}
MAX_DIMS = 16


def _op_lists():
    """X-macro op list name -> the first argument of each of its X(...) lines
    (src_c/include/ember_ew_ops.h: an enum `{ EW_UNARY_OPS(EW_CODE_) EW_NUN }` holds
    EW_<first argument> for each line)."""
    text = open(os.path.join(ROOT, "src_c", "include", "ember_ew_ops.h")).read()
    text = re.sub(r"/\*.*?\*/", "", text.replace("\\\n", " "), flags=re.S)
    return {m.group(1): re.findall(r"\bX\(\s*(\w+)\s*,", m.group(2))
            for m in re.finditer(r"#define (\w+)\(X\)(.*)", text)}


def c_enums(header):
    """name -> value of every enum constant in src_c/include/<header>."""
    text = open(os.path.join(ROOT, "src_c", "include", header)).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lists = _op_lists()
    text = re.sub(r"\b(\w+)\(EW_CODE_\)",
                  lambda m: ", ".join("EW_" + c for c in lists[m.group(1)]) + ",", text)
    out = {}
    for body in re.findall(r"enum\s*\{(.*?)\}", text, flags=re.S):
        v = 0
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            name, _, val = item.partition("=")
            if val.strip():
                v = int(val.strip(), 0)
            out[name.strip()] = v
            v += 1
    return out


class Nd(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int32), ("nargs", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS),
                ("strides", (ctypes.c_int64 * MAX_DIMS) * 4)]


def nd(shape, *strides):
    """An emc_nd over `shape` with one element-stride tuple per operand."""
    d = Nd()
    d.ndim, d.nargs = len(shape), len(strides)
    for i, s in enumerate(shape):
        d.shape[i] = s
    for a, st in enumerate(strides):
        for i, s in enumerate(st):
            d.strides[a][i] = s
    return d


def contig(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


class DevArray:
    def __init__(self, dev, ptr, shape, dtype, nbytes):
        self.dev, self.ptr, self.shape, self.dtype, self.nbytes = dev, ptr, shape, dtype, nbytes

    @property
    def _as_parameter_(self):
        return ctypes.c_void_p(self.ptr)


class Dev:
    def __init__(self):
        from ember import _dll
        self.lib = _dll._cuda_handle("ember_cuda")
        self.rt = _dll._cuda_handle("cudart")
        self.live = []

    def check(self, rc):
        assert rc == 0, f"error {rc}: {self.lib.emc_last_error().decode()}"

    def alloc(self, shape, dtype):
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        p = ctypes.c_void_p()
        self.check(self.lib.emc_malloc(ctypes.byref(p), max(nbytes, 1), None))
        a = DevArray(self, p.value, tuple(shape), np.dtype(dtype), nbytes)
        self.live.append(a)
        return a

    def put(self, x):
        x = np.ascontiguousarray(x)
        a = self.alloc(x.shape, x.dtype)
        if a.nbytes:
            self.check(self.rt.cudaMemcpy(ctypes.c_void_p(a.ptr), ctypes.c_void_p(x.ctypes.data),
                                          ctypes.c_size_t(a.nbytes), 1))
        return a

    def get(self, a, shape=None, dtype=None):
        self.check(self.rt.cudaDeviceSynchronize())
        out = np.empty(shape or a.shape, dtype=dtype or a.dtype)
        if out.nbytes:
            self.check(self.rt.cudaMemcpy(ctypes.c_void_p(out.ctypes.data),
                                          ctypes.c_void_p(a.ptr), ctypes.c_size_t(out.nbytes),
                                          2))
        return out

    def close(self):
        self.rt.cudaDeviceSynchronize()
        for a in self.live:
            self.lib.emc_free(ctypes.c_void_p(a.ptr))
        self.live = []


def bf16_bits(x):
    """float32 values -> bfloat16 bit patterns (uint16), rounded by ember's CPU cast."""
    t = ember.tensor(np.asarray(x, dtype=np.float32)).to(ember.bfloat16)
    return t.view(ember.int16).numpy().view(np.uint16)


def bf16_values(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


# kernel op code -> the ember CPU op it must match
BINARY = {"EW_ADD": ember.add, "EW_SUB": ember.sub, "EW_MUL": ember.mul, "EW_DIV": ember.div,
          "EW_FLOORDIV": ember.floor_divide, "EW_REM": ember.remainder, "EW_FMOD": ember.fmod,
          "EW_POW": ember.pow, "EW_MAX": ember.maximum, "EW_MIN": ember.minimum,
          "EW_FMAX": ember.fmax, "EW_FMIN": ember.fmin, "EW_ATAN2": ember.atan2,
          "EW_HYPOT": ember.hypot, "EW_COPYSIGN": ember.copysign, "EW_XLOGY": ember.xlogy,
          "EW_LOGADDEXP": ember.logaddexp}
INT_BINARY = {"EW_ADD": ember.add, "EW_SUB": ember.sub, "EW_MUL": ember.mul,
              "EW_FLOORDIV": ember.floor_divide, "EW_REM": ember.remainder, "EW_FMOD": ember.fmod,
              "EW_MAX": ember.maximum, "EW_MIN": ember.minimum, "EW_BAND": ember.bitwise_and,
              "EW_BOR": ember.bitwise_or, "EW_BXOR": ember.bitwise_xor}
UNARY = {"EW_NEG": ember.neg, "EW_ABS": ember.abs, "EW_SIGN": ember.sign, "EW_EXP": ember.exp,
         "EW_EXP2": ember.exp2, "EW_EXPM1": ember.expm1, "EW_LOG": ember.log,
         "EW_LOG2": ember.log2, "EW_LOG10": ember.log10, "EW_LOG1P": ember.log1p,
         "EW_SQRT": ember.sqrt, "EW_RSQRT": ember.rsqrt, "EW_SIN": ember.sin, "EW_COS": ember.cos,
         "EW_TAN": ember.tan, "EW_ASIN": ember.asin, "EW_ACOS": ember.acos, "EW_ATAN": ember.atan,
         "EW_SINH": ember.sinh, "EW_COSH": ember.cosh, "EW_TANH": ember.tanh,
         "EW_ASINH": ember.asinh, "EW_ATANH": ember.atanh, "EW_SIGMOID": ember.sigmoid,
         "EW_RELU": ember.relu, "EW_GELU": F.gelu, "EW_SILU": F.silu, "EW_MISH": F.mish,
         "EW_ERF": ember.erf, "EW_ERFC": ember.erfc, "EW_FLOOR": ember.floor,
         "EW_CEIL": ember.ceil, "EW_ROUND": ember.round, "EW_TRUNC": ember.trunc,
         "EW_FRAC": ember.frac, "EW_RECIP": ember.reciprocal, "EW_SQUARE": ember.square,
         "EW_LGAMMA": ember.lgamma}


class Conv2dParams(ctypes.Structure):
    """src_c/include/ember_conv.h's ember_conv2d_params."""
    _fields_ = [(n, ctypes.c_int64) for n in
                ("N", "C", "H", "W", "OC", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw",
                 "groups", "Ho", "Wo")]


class Pool2dParams(ctypes.Structure):
    """src_c/include/ember_conv.h's ember_pool2d_params."""
    _fields_ = ([(n, ctypes.c_int64) for n in
                 ("planes", "H", "W", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "Ho",
                  "Wo")]
                + [("count_include_pad", ctypes.c_int), ("divisor", ctypes.c_int64)])


def ptr_array(arrays):
    """A host array of the device pointers of `arrays` (for srcs / index lists)."""
    return (ctypes.c_void_p * max(len(arrays), 1))(*[a.ptr for a in arrays])
