"""C11 + OpenMP source for the kernels the scheduler built.

One function per kernel, ``void kN(void **a, int nt, int64_t n0)``: ``a`` holds
the data pointers of the kernel's inputs then its outputs, ``nt`` the thread
count, ``n0`` the size of the leading dimension (the one size not baked in).
Rows are split across threads and each row is computed by one thread, so
results do not depend on the thread count.  Shapes and strides are baked in
(the capture guards them).
"""
from __future__ import annotations

import math
from typing import Any

from ember.fx import Node

from . import lowering as L
from .scheduler import Kernel, _dtype, _meta, gemm_operands
from .scheduler import _op_name as _name

OMP_PRELUDE = r"""
/* One-thread parallel regions (small tensors, one thread) run their body
   directly: libgomp's team barrier costs a futex wake-up even for a team of one
   (the module is linked with --wrap=GOMP_parallel, as ember's own are). */
#if defined(__linux__) && defined(_OPENMP)
#include <omp.h>
void __real_GOMP_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags);
__attribute__((visibility("hidden"))) void __wrap_GOMP_parallel(
        void (*fn)(void *), void *data, unsigned nthreads, unsigned flags) {
    if (nthreads == 1 && !omp_in_parallel()) {
        fn(data);
        return;
    }
    __real_GOMP_parallel(fn, data, nthreads, flags);
}
#endif
"""

PRELUDE = r"""
/* one max instruction: a NaN passes through (the comparison is false) */
static inline float em_cg_relu(float x) { return 0.0f > x ? 0.0f : x; }
static inline float em_cg_max(float a, float b) {
    return (a != a || b != b) ? a + b : (a > b ? a : b); }
static inline float em_cg_min(float a, float b) {
    return (a != a || b != b) ? a + b : (a < b ? a : b); }
static inline float em_cg_pow(float a, float b) { return b == 2.0f ? a * a : powf(a, b); }
/* sin/cos that vectorise (Cephes' polynomials on [-pi/4, pi/4] after a reduction
   by the nearest multiple of pi/2 in three parts, ~1 ulp for |x| <= 8192; the
   quadrant picks the polynomial and flips the sign bit).  sin and cos of one
   argument share everything but that choice.  A kernel that meets a larger |x|
   reruns with libm's. */
#define EM_CG_TRIG_MAX 8192.0f
static inline float em_cg_trig(float x, int want_cos) {
    float jf = rintf(x * 0.636619772367581343f);
    int32_t q = (int32_t)jf + want_cos;
    float r = ((x - jf * 1.5703125f) - jf * 4.837512969970703125e-4f)
              - jf * 7.54978995489188216e-8f;
    float z = r * r;
    float pc = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z
                + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
    float ps = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
    float v = (q & 1) ? pc : ps;
    int32_t b;
    memcpy(&b, &v, 4);
    b ^= (int32_t)((uint32_t)(q & 2) << 30);
    memcpy(&v, &b, 4);
    return v;
}
/* the eager kernel's sigmoid (ember_math.h, em_sigmoidf) for x >= -80, where
   exp(-|x|) is a normal float: one scale factor instead of two and no rescaling,
   the same bits.  A kernel that meets x < -80 (its tail keeps bits down to the
   subnormal range) reruns with em_sigmoidf. */
#define EM_CG_SIGMOID_MIN 80.0f
static inline float em_cg_sigmoid_mid(float x) {
    float a = fabsf(x);
    float xc = a > EM_CG_SIGMOID_MIN ? -EM_CG_SIGMOID_MIN : -a;
    float fx = floorf(xc * 1.44269504088896341f + 0.5f);
    float r = xc - fx * 0.693359375f + fx * 2.12194440e-4f;
    float y = 1.9875691500E-4f;
    y = EM_MADF(y, r, 1.3981999507E-3f);
    y = EM_MADF(y, r, 8.3334519073E-3f);
    y = EM_MADF(y, r, 4.1665795894E-2f);
    y = EM_MADF(y, r, 1.6666665459E-1f);
    y = EM_MADF(y, r, 5.0000001201E-1f);
    y = EM_MADF(y, r * r, r) + 1.0f;
    int32_t eb = ((int32_t)fx + 127) << 23;
    float s;
    memcpy(&s, &eb, 4);
    float e = y * s;
    return (x < 0.0f ? e : 1.0f) / (1.0f + e);
}
/* exact gelu's derivative (the eager kernel's formula): em_gelu_grad_vf covers
   every x, so the _exact rerun gives the same bits (gelu itself is em_gelu_vf) */
#define EM_CG_GELU_MIN 5.5f
#define em_cg_gelu_grad_fast(x) em_gelu_grad_vf(x)
#define em_cg_gelu_grad_exact(x) em_gelu_gradf(x)
#define em_cg_sigmoid_fast(x) em_cg_sigmoid_mid(x)
#define em_cg_sigmoid_exact(x) em_sigmoidf(x)
#define em_cg_sin_fast(x) em_cg_trig((x), 0)
#define em_cg_cos_fast(x) em_cg_trig((x), 1)
#define em_cg_sin_exact(x) ((float)sin((double)(x)))
#define em_cg_cos_exact(x) ((float)cos((double)(x)))
"""

# below this many elements a kernel runs on one thread (fork/join costs more)
_PAR_MIN = 1 << 15


def _lit(v: Any) -> str:
    if isinstance(v, bool):
        return "1.0f" if v else "0.0f"
    return f"{float(v).hex()}f" if float(v) != 0 else "0.0f"


def _strides(k: Kernel, x: Node) -> list:
    """Per-dim element strides of input ``x`` aligned to the kernel shape (0 where broadcast)."""
    m = _meta(x)
    shape, stride = list(m.shape), list(m.stride)
    pad = len(k.vshape) - len(shape)
    out = [0] * pad
    for s, st, v in zip(shape, stride, k.vshape[pad:]):
        out.append(0 if (s == 1 and v != 1) else st)
    return out


class _Dims:
    """How the code names the kernel's sizes and strides: numbers baked in (the leading
    size excepted: the argument ``n0``), or, for code that serves every size
    (``dynamic=True``), entries of the int64 array ``z`` the runtime passes after the
    outputs (``values``, in slot order).  Sizes of 1 and strides of 0 or 1 stay
    numbers either way: they are the layout, which the code is built for."""

    def __init__(self, dyn: bool) -> None:
        self.dyn = dyn
        self.values: list = []
        self._slots: dict = {}

    def _z(self, key: tuple, v: int) -> str:
        if key not in self._slots:
            self._slots[key] = len(self.values)
            self.values.append(int(v))
        return f"z[{self._slots[key]}]"

    def dim(self, k: Kernel, d: int) -> str:
        v = k.vshape[d]
        if self.dyn and v != 1:
            return self._z(("dim", d), v)
        return "n0" if d == 0 else f"{v}LL"

    def prod(self, k: Kernel, ds: range) -> str:
        """The product of the kernel's sizes ``ds``."""
        if not len(ds):
            return "1LL"
        if self.dyn:
            return "(" + " * ".join(self.dim(k, d) for d in ds) + ")"
        rest = math.prod(k.vshape[d] for d in ds if d != 0)
        return f"(n0 * {rest}LL)" if ds[0] == 0 else f"{rest}LL"

    def num(self, key: Any, v: int) -> str:
        """A size or stride ``v`` (``key`` names it)."""
        return self._z(("num", key), v) if self.dyn and v not in (0, 1) else f"{v}LL"


def _row_offset(k: Kernel, st: list, D: _Dims | None = None, key: Any = None) -> str:
    D = D or _Dims(False)
    dims = list(k.vshape[:-1])
    if not dims:
        return "0"
    # collapse to r * s when the row dims are laid out like a contiguous block
    inner = 1
    ok = True
    for d in range(len(dims) - 1, -1, -1):
        if dims[d] != 1 and st[d] != st[len(dims) - 1] * inner:
            ok = False
        inner *= dims[d]
    if ok:
        return f"r * {D.num((key, len(dims) - 1), st[len(dims) - 1])}"
    terms, inner = [], []
    for d in range(len(dims) - 1, -1, -1):
        if dims[d] != 1 and st[d] != 0:
            # r < rows: the leading index needs no modulo (nor the leading size)
            div = "(" + " * ".join(inner) + ")" if inner else "1LL"
            q = f"(r / {div})" if d == 0 else f"((r / {div}) % {D.dim(k, d)})"
            terms.append(f"{q} * {D.num((key, d), st[d])}")
        if dims[d] != 1:
            inner.append(D.dim(k, d))
    return " + ".join(terms) or "0"


def _flat(k: Kernel) -> bool:
    """No per-row values and every input is contiguous of the kernel's shape:
    one flat loop over all elements."""
    if any(c in ("S", "T", "K") for c in k.cls.values()) or any(
            isinstance(p, L.Row) for p, _ in k.prim.values()):
        return False
    for x in k.inputs:
        m = _meta(x)
        if tuple(m.shape) != k.vshape:
            return False
        expect, st = 1, []
        for s in reversed(m.shape):
            st.append(expect)
            expect *= s
        if any(s != 1 and a != b for s, a, b in zip(m.shape, m.stride, reversed(st))):
            return False
    return True


def _variant(text: str, v: str) -> str:
    """``text`` calling the ``v`` (fast or exact) form of each two-form function."""
    for f in L.FAST_FNS:
        text = text.replace(f + "(", f"{f}_{v}(")
    return text


def _range_check(k: Kernel, n: Node, operand: Any) -> str:
    """C keeping ``big`` the largest distance past the fast range of ``n``'s function
    (one max per vector; a NaN never replaces it), or ""."""
    r = L.FAST_RANGE.get(_name(n) or "")
    if r is None or not isinstance(k.prim[n][0], L.Pointwise):
        return ""
    a = r[1].format(operand(k.prim[n][1][r[0]]))
    return f" big = {a} > big ? {a} : big;"


def kernel_source(k: Kernel, name: str, par_min: int = _PAR_MIN, dyn: bool = False) -> str:
    """The C function for kernel ``k``; it forks threads from ``par_min`` elements.
    ``dyn``: every size and stride is read at run time (``k.sizes`` lists them)."""
    flat = _flat(k)
    D = _Dims(dyn)
    # the leading size is the run-time argument n0, so one kernel serves every
    # size of that dimension (a new batch size needs no new build)
    nd = len(k.vshape)
    C = D.dim(k, nd - 1) if nd else "1LL"
    if flat:
        Rs, Cs = "1LL", D.prod(k, range(nd))
    else:
        Rs, Cs = D.prod(k, range(nd - 1)), C
    # the body is written twice: the fast variant flags arguments its vectorised
    # sin/cos cannot take, and then the exact one (libm) reruns the kernel
    lines = [f"static int {name}_VARIANT(void **a, int nt, int64_t n0) {{",
             "    float big = 0.0f; (void)n0;"]
    var: dict = {}
    for i, x in enumerate(k.inputs):
        ct = "const unsigned char" if _dtype(_meta(x)) == "bool" else "const float"
        lines.append(f"    {ct} *restrict in{i} = ({ct} *)a[{i}];")
    for i, n in enumerate(k.outputs):
        ct = "unsigned char" if _dtype(_meta(n)) == "bool" else "float"
        lines.append(f"    {ct} *restrict out{i} = ({ct} *)a[{len(k.inputs) + i}];")
    for i, n in enumerate(k.nodes):
        var[n] = f"{'v' if k.cls[n] == 'V' else 's'}{i}"
    body: list = []
    ind = "        "
    if not flat:
        for i, x in enumerate(k.inputs):
            st = _strides(k, x)
            body.append(f"{ind}const int64_t ro{i} = {_row_offset(k, st, D, i)}; "
                        f"(void)ro{i};")

    def load(i: int) -> str:
        if flat:
            return f"(float)in{i}[j]"
        sj = _strides(k, k.inputs[i])[-1] if k.vshape else 0
        return f"(float)in{i}[ro{i} + j * {D.num((i, nd - 1), sj)}]"

    def operand(a: Any) -> str:
        if isinstance(a, Node):
            return var[a] if a in var else load(k.inputs.index(a))
        return _lit(a)

    def v_closure(targets: list) -> list:
        need, stack = set(), list(targets)
        while stack:
            n = stack.pop()
            if n in need or k.cls.get(n) != "V":
                continue
            need.add(n)
            stack.extend(a for a in k.prim[n][1] if isinstance(a, Node))
        return [n for n in k.nodes if n in need]

    def trig_check(n: Node) -> str:
        return _range_check(k, n, operand)

    def v_stmt(n: Node) -> str:
        prim, ops = k.prim[n]
        if isinstance(prim, L.Pointwise):
            return (f"const float {var[n]} = {prim.expr.format(*map(operand, ops))};"
                    + trig_check(n))
        x = operand(ops[0])
        m, z = var[n] + "_m", var[n] + "_z"
        if prim.kind == "softmax":
            return f"const float {var[n]} = em_expf({x} - {m}) / {z};"
        return f"const float {var[n]} = {x} - {m} - {var[n]}_lz;"

    def loop(targets: list, tail: list, pragma: str) -> list:
        out = [f"{ind}{pragma}", f"{ind}for (int64_t j = 0; j < {Cs}; j++) {{"]
        out += [ind + "    " + v_stmt(n) for n in v_closure(targets)]
        out += [ind + "    " + t for t in tail]
        out.append(ind + "}")
        return out

    def max_loop(x: Any, m: str) -> list:
        # a max reduction OpenMP vectorises, with NaNs tracked apart (a NaN wins)
        out = [f"{ind}float {m} = -INFINITY; int {m}_nan = 0;"]
        out += loop([x] if isinstance(x, Node) else [],
                    [f"{m} = {m} > {operand(x)} ? {m} : {operand(x)};",
                     f"{m}_nan |= {operand(x)} != {operand(x)};"],
                    f"#pragma omp simd reduction(max:{m}) reduction(|:{m}_nan) "
                    f"reduction(max:big)")
        out.append(f"{ind}if ({m}_nan) {m} = NAN;")
        return out

    for n in k.nodes:
        prim, ops = k.prim[n]
        if k.cls[n] == "S" and isinstance(prim, L.Pointwise):
            body.append(f"{ind}const float {var[n]} = {prim.expr.format(*map(operand, ops))};"
                        + trig_check(n))
        elif k.cls[n] == "K":
            # this row's values join its block's column sums (blocks are fixed, not
            # per thread, so results do not depend on the thread count)
            o = k.outputs.index(n)
            body += loop([ops[0]], [f"pk{o}[j] += (double){operand(ops[0])};"],
                         "#pragma omp simd reduction(max:big)")
        elif isinstance(prim, L.Reduction):
            x, acc = ops[0], var[n] + "_acc"
            if prim.kind == "amax":
                body += max_loop(x, acc)
                body.append(f"{ind}const float {var[n]} = {acc};")
            else:
                body.append(f"{ind}float {acc} = 0.0f;")
                body += loop([x], [f"{acc} += {operand(x)};"],
                             f"#pragma omp simd reduction(+:{acc}) reduction(max:big)")
                div = f" / (float){C}" if prim.kind == "mean" else ""
                body.append(f"{ind}const float {var[n]} = {acc}{div};")
        elif isinstance(prim, L.Row):
            x = ops[0]
            m, z = var[n] + "_m", var[n] + "_z"
            body += max_loop(x, m)
            body.append(f"{ind}float {z} = 0.0f;")
            body += loop([x], [f"{z} += em_expf({operand(x)} - {m});"],
                         f"#pragma omp simd reduction(+:{z}) reduction(max:big)")
            if prim.kind == "log_softmax":
                body.append(f"{ind}const float {var[n]}_lz = (float)log((double){z});")
    v_out = [(i, n) for i, n in enumerate(k.outputs) if k.cls[n] == "V"]
    if v_out:
        idx = "j" if flat else f"r * {Cs} + j"
        tail = []
        for i, n in v_out:
            val = f"({var[n]} != 0)" if _dtype(_meta(n)) == "bool" else var[n]
            tail.append(f"out{i}[{idx}] = {val};")
        body += loop([n for _, n in v_out], tail, "#pragma omp simd reduction(max:big)")
    totals = [(i, n) for i, n in enumerate(k.outputs) if k.cls[n] == "T"]
    columns = [(i, n) for i, n in enumerate(k.outputs) if k.cls[n] == "K"]
    for i, n in enumerate(k.outputs):
        if k.cls[n] == "S":
            body.append(f"{ind}out{i}[r] = {var[n]};")
        elif k.cls[n] == "T":
            # one value per row, summed in row order after the loop: the result does
            # not depend on how rows were split across threads
            body.append(f"{ind}part{i}[r] = (double){var[n]};")
    for i, n in totals:
        lines.append(f"    double *part{i} = (double *)malloc(sizeof(double) * {Rs});")
        lines.append(f"    if (!part{i}) {{ out{i}[0] = NAN; return 0; }}")
    par = (f"num_threads(nt) schedule(static) if({Rs} * {Cs} >= {par_min}LL) "
           f"reduction(max:big)")
    if flat:
        body = [f"{ind}#pragma omp parallel for simd {par}"
                if b.strip().startswith("#pragma omp simd") else b for b in body]
        lines += [b[4:] for b in body]
    elif columns:
        # threads: one partial row per block, summed in block order at the end; one
        # thread: each block's partial goes into the running total as soon as it is
        # done (the same additions in the same order, in 2 rows of scratch instead of
        # nb: a large calloc is a fresh mmap, zeroed page by page, on every call);
        # blocks of one row add straight into the total (0.0 + x is x, bar the sign
        # of a zero that the total never has)
        lines.append(f"    const int64_t nr = {Rs}, nb = nr < 64 ? (nr ? nr : 1) : 64, "
                     f"rb = (nr + nb - 1) / nb;")
        lines.append(f"    const int par = nt != 1 && nb > 1 && {Rs} * {Cs} >= {par_min}LL, "
                     f"direct = !par && rb == 1;")
        for i, n in columns:
            lines.append(f"    double *part{i} = (double *)malloc((par ? nb : 2) * {C} * "
                         f"sizeof(double));")
            lines.append(f"    if (!part{i}) {{ for (int64_t j = 0; j < {C}; j++) "
                         f"out{i}[j] = NAN; return 0; }}")
            lines.append(f"    if (!par) for (int64_t j = 0; j < {C}; j++) part{i}[j] = 0.0;")
        lines.append(f"    #pragma omp parallel for {par.replace('if(', 'if(par && ')}")
        lines.append("    for (int64_t blk = 0; blk < nb; blk++) {")
        for i, _ in columns:
            lines.append(f"        double *pk{i} = part{i} + (par ? blk : !direct) * {C};")
            lines.append(f"        if (!direct) for (int64_t j = 0; j < {C}; j++) pk{i}[j] = 0.0;")
        lines.append("        const int64_t r1 = (blk + 1) * rb < nr ? (blk + 1) * rb : nr;")
        lines.append("        for (int64_t r = blk * rb; r < r1; r++) {")
        lines += ["    " + b for b in body]
        lines.append("        }")
        for i, _ in columns:
            lines.append(f"        if (!par && !direct) for (int64_t j = 0; j < {C}; j++) "
                         f"part{i}[j] += pk{i}[j];")
        lines.append("    }")
        for i, n in columns:
            div = " / (double)nr" if k.prim[n][0].kind == "mean" else ""
            lines.append(f"    for (int64_t j = 0; j < {C}; j++) {{ double t = 0.0;")
            lines.append(f"        if (par) for (int64_t b = 0; b < nb; b++) "
                         f"t += part{i}[b * {C} + j];")
            lines.append(f"        else t = part{i}[j];")
            lines.append(f"        out{i}[j] = (float)(t{div}); }}")
            lines.append(f"    free(part{i});")
    else:
        lines.append(f"    #pragma omp parallel for {par}")
        lines.append(f"    for (int64_t r = 0; r < {Rs}; r++) {{")
        lines += body
        lines.append("    }")
    for i, n in totals:
        div = f" / (double){Rs}" if k.prim[n][0].kind == "mean" else ""
        lines.append(f"    {{ double t = 0.0; for (int64_t r = 0; r < {Rs}; r++) t += part{i}[r];")
        lines.append(f"      out{i}[0] = (float)(t{div}); free(part{i}); }}")
    lines.append("    return big > EM_CG_TRIG_MAX;")
    lines.append("}")
    if D.values:
        lines.insert(2, f"    const int64_t *z = (const int64_t *)"
                        f"a[{len(k.inputs) + len(k.outputs)}];")
    k.sizes = D.values if dyn else None
    text = "\n".join(lines) + "\n"
    variants = [_variant(text.replace("_VARIANT(", f"_{v}("), v) for v in ("fast", "exact")]
    if not any(f + "(" in text for f in L.FAST_FNS):
        variants = variants[:1]
        tail = f"void {name}(void **a, int nt, int64_t n0) {{ {name}_fast(a, nt, n0); }}\n"
    else:
        tail = (f"void {name}(void **a, int nt, int64_t n0) {{ if ({name}_fast(a, nt, n0)) "
                f"{name}_exact(a, nt, n0); }}\n")
    return "".join(variants) + tail


# ember's GEMM with an epilogue hook (ember_sgemm_epi in ember_gemm.h, same layout),
# reached through a pointer the runtime sets once the module is loaded
GEMM_PRELUDE = r"""
typedef struct { const float *p; int64_t rs, cs; const int64_t *ro, *co; } em_cg_smat;
typedef void (*em_cg_epi)(float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                          void *);
typedef void (*em_cg_gemm_fn)(int64_t, int64_t, int64_t, float, const em_cg_smat *,
                              const em_cg_smat *, float, float *, int64_t, int64_t,
                              const float *, const float *, em_cg_epi, void *, int);
static em_cg_gemm_fn em_cg_gemm;
void em_cg_set_gemm(void *fn) { em_cg_gemm = (em_cg_gemm_fn)fn; }
"""


def gemm_kernel_source(k: Kernel, name: str, dyn: bool = False) -> str:
    """A GEMM kernel: ``name`` runs ember's GEMM for the linear ``k.gemm`` and hands it
    ``name_epi``, which computes the pointwise nodes on each finished block of the
    product (read from the block, stored to the outputs).  With the product itself
    unused outside, the block is overwritten in place by one of the outputs.
    ``name_after`` is the other variant max-autotune times: the whole GEMM first,
    then the epilogue over blocks of rows in a parallel loop.  ``dyn``: every size and
    stride is read at run time (``k.sizes`` lists them)."""
    x, w, b = gemm_operands(k.gemm)
    D = _Dims(dyn)
    nd = len(k.vshape)
    rows = D.prod(k, range(nd - 1))
    N, K = D.dim(k, nd - 1), D.num("K", _meta(w).shape[1])
    wst = [D.num(("w", d), v) for d, v in enumerate(_meta(w).stride)]
    nin = len(k.inputs)
    floats = [i for i, n in enumerate(k.outputs) if _dtype(_meta(n)) == "float32"]
    ci = k.outputs.index(k.gemm) if k.gemm in k.outputs else floats[0]
    var = {n: f"v{i}" for i, n in enumerate(k.nodes)}
    used = [i for i, x_ in enumerate(k.inputs)
            if any(x_ in k.prim[n][1] for n in k.nodes[1:])]

    def operand(a: Any) -> str:
        if not isinstance(a, Node):
            return _lit(a)
        if a in var:
            return var[a]
        i = k.inputs.index(a)
        return f"(float)in{i}[ro{i} + j * {D.num((i, nd - 1), _strides(k, a)[-1])}]"

    lines = [f"static void {name}_epi(float *c, int64_t rsc, int64_t csc, int64_t i0, "
             f"int64_t j0, int64_t m, int64_t n, void *ctx) {{",
             "    void **a = (void **)ctx;"]
    for i in used:
        ct = "const unsigned char" if _dtype(_meta(k.inputs[i])) == "bool" else "const float"
        lines.append(f"    {ct} *in{i} = ({ct} *)a[{i}];")
    for i, n in enumerate(k.outputs):
        ct = "unsigned char" if _dtype(_meta(n)) == "bool" else "float"
        lines.append(f"    {ct} *out{i} = ({ct} *)a[{nin + i}]; (void)out{i};")
    lines.append("    for (int64_t ii = 0; ii < m; ii++) {")
    lines.append("        const int64_t r = i0 + ii;")
    for i in used:
        lines.append(f"        const int64_t ro{i} = "
                     f"{_row_offset(k, _strides(k, k.inputs[i]), D, i)};")
    body = [f"const float {var[k.gemm]} = c[ii * rsc + jj * csc];"]
    for n in k.nodes[1:]:
        prim, ops = k.prim[n]
        body.append(f"const float {var[n]} = {prim.expr.format(*map(operand, ops))};"
                    + _range_check(k, n, operand))
    for i, n in enumerate(k.outputs):
        if n is k.gemm and i == ci:
            continue      # the block is this output's own memory
        val = f"({var[n]} != 0)" if _dtype(_meta(n)) == "bool" else var[n]
        body.append(f"out{i}[r * {N} + j] = {val};")
    text = "\n".join(body)
    # a row whose values leave a fast function's range is computed again with the
    # full-range forms (the product is then kept apart from the outputs: scheduler)
    rerun = any(f + "(" in text for f in L.FAST_FNS)
    lines.append("        float big = 0.0f; (void)big;")
    lines.append("        #pragma omp simd reduction(max:big)")
    lines.append("        for (int64_t jj = 0; jj < n; jj++) {")
    lines.append("            const int64_t j = j0 + jj;")
    lines += ["            " + t for t in _variant(text, "fast").split("\n")]
    lines.append("        }")
    if rerun:
        lines.append("        if (big > EM_CG_TRIG_MAX)")
        lines.append("            for (int64_t jj = 0; jj < n; jj++) {")
        lines.append("                const int64_t j = j0 + jj;")
        lines += ["                " + t for t in _variant(text, "exact").split("\n")]
        lines.append("            }")
    lines += ["    }", "}"]
    bias = f"(const float *)a[{k.inputs.index(b)}]" if b is not None else "NULL"
    zdecl = (f"    const int64_t *z = (const int64_t *)a[{nin + len(k.outputs)}]; (void)z;"
             if D.values else "")
    lines.insert(2, zdecl)
    lines += [f"void {name}(void **a, int nt, int64_t n0) {{", zdecl,
              f"    const em_cg_smat A = {{(const float *)a[{k.inputs.index(x)}], {K}, 1LL, "
              f"NULL, NULL}};",
              f"    const em_cg_smat B = {{(const float *)a[{k.inputs.index(w)}], {wst[1]}, "
              f"{wst[0]}, NULL, NULL}};",
              f"    em_cg_gemm({rows}, {N}, {K}, 1.0f, &A, &B, 0.0f, (float *)a[{nin + ci}], "
              f"{N}, 1LL, NULL, {bias}, {name}_epi, a, nt);",
              "}"]
    lines += [f"void {name}_after(void **a, int nt, int64_t n0) {{", zdecl,
              f"    const int64_t M = {rows};",
              f"    float *C = (float *)a[{nin + ci}];",
              f"    const em_cg_smat A = {{(const float *)a[{k.inputs.index(x)}], {K}, 1LL, "
              f"NULL, NULL}};",
              f"    const em_cg_smat B = {{(const float *)a[{k.inputs.index(w)}], {wst[1]}, "
              f"{wst[0]}, NULL, NULL}};",
              f"    em_cg_gemm(M, {N}, {K}, 1.0f, &A, &B, 0.0f, C, {N}, 1LL, NULL, {bias}, "
              f"NULL, NULL, nt);",
              f"    #pragma omp parallel for num_threads(nt) schedule(static) "
              f"if(M * {N} >= {_PAR_MIN}LL)",
              "    for (int64_t r0 = 0; r0 < M; r0 += 16)",
              f"        {name}_epi(C + r0 * {N}, {N}, 1LL, r0, 0, M - r0 < 16 ? M - r0 : 16, "
              f"{N}, a);",
              "}"]
    k.sizes = D.values if dyn else None
    return "\n".join(lines) + "\n"


def module_source(kernels: list, math_header: str, par_min: int = _PAR_MIN,
                  dyn: bool = False) -> str:
    """The whole translation unit: ember's scalar math, helpers, one function per kernel
    (autotuning passes ``par_min=1``: the thread count it picks is then the one used).
    ``dyn``: code for every size (sizes and strides read at run time, ``k.sizes``)."""
    parts = ["#include <math.h>", "#include <stdint.h>", "#include <stdlib.h>", math_header,
             OMP_PRELUDE, PRELUDE]
    if any(k.gemm is not None for k in kernels):
        parts.append(GEMM_PRELUDE)
    parts += [gemm_kernel_source(k, f"k{i}", dyn) if k.gemm is not None else
              kernel_source(k, f"k{i}", par_min, dyn) for i, k in enumerate(kernels)]
    return "\n".join(parts)
