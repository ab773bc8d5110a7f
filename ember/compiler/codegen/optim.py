"""``optimizer.step()`` inside a compiled training step, as generated C.

A compiled call runs the optimizer's step between its graphs.  For SGD, Adam and
AdamW in their multi-tensor form (the default), :class:`FusedUpdate` runs that
step as one generated function instead: one loop over every parameter of every
group, cut into fixed blocks shared by the threads, with the hyperparameters
that do not change from step to step (betas, eps, weight decay, momentum and
the flags) baked in as constants.  The learning rate of each group and the step
count of each parameter are read at run time, so a scheduler changing ``lr``
keeps the code.  The arithmetic is the eager multi-tensor kernels' (``ember._C.
foreach``), operation for operation and without contracting ``a * b + c`` into
an FMA, so parameters and optimizer state equal eager's bit for bit.

The first call (the capture's) runs the eager step, which creates the optimizer
state; the code is built from that state.  Each later call checks that what the
code assumes still holds (the same parameters have gradients of the right
size, dtype and layout; the same state tensors; the same baked hyperparameters;
no step hooks) and otherwise runs the eager step, which is always right.
"""
from __future__ import annotations

import ctypes
from array import array
from typing import Any, Callable

import ember
from ember._C import cgrun as _cgrun

from . import cache
from .cgen import _PAR_MIN, OMP_PRELUDE

# the eager kernels' block size (the blocks only decide how threads share the work)
_BLOCK = 16384
_KINDS = ("sgd", "adam")


def _kind(opt: Any) -> str | None:
    from ember.optim.adam import Adam
    from ember.optim.sgd import SGD
    t = type(opt)
    if isinstance(opt, SGD) and t.step is SGD.step and t._multi_step is SGD._multi_step:
        return "sgd"
    if isinstance(opt, Adam) and t.step is Adam.step and t._multi_step is Adam._multi_step:
        return "adam"
    return None


def _group_config(kind: str, g: dict) -> tuple | None:
    """The baked hyperparameters of a group (None: the group does not fit the code)."""
    if g.get("differentiable") or (g.get("foreach") is False and not g.get("fused")):
        return None
    if type(g["lr"]) not in (int, float):
        return None
    if kind == "sgd":
        vals = (g["weight_decay"], g["momentum"], g["dampening"])
        if not all(type(v) in (int, float) for v in vals):
            return None
        return vals + (bool(g["nesterov"]), bool(g["maximize"]))
    if g.get("capturable"):
        return None
    b1, b2 = g["betas"]
    vals = (b1, b2, g["eps"], g["weight_decay"])
    if not all(type(v) in (int, float) for v in vals):
        return None
    return vals + (bool(g["amsgrad"]), bool(g["maximize"]),
                   bool(g.get("decoupled_weight_decay", False)))


def _fits(t: Any, p: Any) -> bool:
    return (t is not None and t.dtype is p.dtype and t.shape == p.shape and
            t.device.type == "cpu" and t.is_contiguous() and not t._mbits and
            t.layout is ember.strided)


def _c_float(dt: Any) -> str:
    return "float" if dt is ember.float32 else "double"


def _lit(v: float) -> str:
    return repr(float(v))


def _adam_source(ctype: str, n: int, groups: list, configs: list, blocks: list) -> str:
    """Adam/AdamW over ``n`` parameters: a[0:n] params, a[n:2n] grads, a[2n:3n] exp_avg,
    a[3n:4n] exp_avg_sq, (amsgrad) a[4n:5n] max_exp_avg_sq, then the doubles: each
    group's lr, then each parameter's step count."""
    sq = "sqrtf" if ctype == "float" else "sqrt"
    ams = configs[0][4]
    ng = len(configs)
    body = []
    for gi, (b1, b2, eps, wd, _, neg, dec) in enumerate(configs):
        l2 = wd != 0 and not dec
        dwd = wd != 0 and dec
        upd = [f"        {ctype} g = G[i], p = P[i];"]
        if neg:
            upd.append("        g = -g;")
        if l2:
            upd.append("        g = g + wd * p;")
        if dwd:
            upd.append("        p = p * decay;")
        upd += ["        T m = LERP(M[i], g, w1);", "        T gg = g * g;",
                "        T v = LERP(V[i], gg, w2);", "        M[i] = m; V[i] = v;"]
        if ams:
            upd.append("        v = MAXNAN(MX[i], v); MX[i] = v;")
        upd += [f"        T d = {sq}(v);", "        d = d + epsh;", "        d = m / d;",
                "        P[i] = p + alpha * d;"]
        body.append(f"""
static void g{gi}(T *restrict P, const T *restrict G, T *restrict M, T *restrict V,
               T *restrict MX, double lr, double step, int64_t lo, int64_t hi) {{
    const double bc1 = 1 - pow({_lit(b1)}, step);
    const double bc2_sqrt = sqrt(1 - pow({_lit(b2)}, step));
    const T w1 = (T)(1 - {_lit(b1)}), w2 = (T)(1 - {_lit(b2)});
    const T epsh = (T)({_lit(eps)} * bc2_sqrt), alpha = (T)(-lr * bc2_sqrt / bc1);
    const T wd = (T){_lit(wd)}, decay = (T)(1 - lr * {_lit(wd)});
    (void)wd; (void)decay; (void)MX;
    for (int64_t i = lo; i < hi; i++) {{
{chr(10).join(upd)}
    }}
}}""")
    calls = "\n".join(
        f"        case {gi}: g{gi}((T *)a[k], (const T *)a[{n} + k], (T *)a[{2 * n} + k], "
        f"(T *)a[{3 * n} + k], {f'(T *)a[{4 * n} + k]' if ams else 'NULL'}, s[{gi}], "
        f"s[{ng} + k], lo, hi); break;" for gi in range(ng))
    return _module(ctype, n, groups, blocks, "".join(body), calls, 5 if ams else 4)


def _sgd_source(ctype: str, n: int, groups: list, configs: list, blocks: list) -> str:
    """SGD over ``n`` parameters: a[0:n] params, a[n:2n] grads, (momentum) a[2n:3n] the
    momentum buffers, then the doubles: each group's lr."""
    body = []
    mo_any = any(c[1] != 0 for c in configs)
    for gi, (wd, mo, damp, nest, neg) in enumerate(configs):
        upd = ["        T g = G[i];"]
        if neg:
            upd.append("        g = -g;")
        if wd != 0:
            upd.append("        g = g + wd * P[i];")
        if mo != 0:
            upd += ["        T b = B[i] * mo + damp * g;", "        B[i] = b;",
                    "        g = g + mo * b;" if nest else "        g = b;"]
        upd.append("        P[i] = P[i] + nlr * g;")
        body.append(f"""
static void g{gi}(T *restrict P, const T *restrict G, T *restrict B, double lr,
               int64_t lo, int64_t hi) {{
    const T wd = (T){_lit(wd)}, mo = (T){_lit(mo)}, damp = (T)(1 - {_lit(damp)});
    const T nlr = (T)(-lr);
    (void)wd; (void)mo; (void)damp; (void)B;
    for (int64_t i = lo; i < hi; i++) {{
{chr(10).join(upd)}
    }}
}}""")
    calls = "\n".join(
        f"        case {gi}: g{gi}((T *)a[k], (const T *)a[{n} + k], "
        f"{f'(T *)a[{2 * n} + k]' if mo_any else 'NULL'}, s[{gi}], lo, hi); break;"
        for gi in range(len(configs)))
    return _module(ctype, n, groups, blocks, "".join(body), calls, 3 if mo_any else 2)


def _module(ctype: str, n: int, groups: list, blocks: list, body: str, calls: str,
            rows: int) -> str:
    nb = len(blocks)
    table = ", ".join(f"{{{k}, {lo}, {hi}}}" for k, lo, hi in blocks)
    return f"""#include <math.h>
#include <stdint.h>
#include <stdlib.h>
{OMP_PRELUDE}
/* the eager kernels' operations, one by one: no a * b + c contracted into an FMA */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
typedef {ctype} T;
#define LERP(x, y, t) ((t) < 0.5 ? (x) + (t) * ((y) - (x)) : (y) - ((y) - (x)) * (1 - (t)))
#define MAXNAN(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) > (b) ? (a) : (b)))
static const int64_t BLOCKS[{nb}][3] = {{{table}}};
static const int GROUP[{n}] = {{{", ".join(map(str, groups))}}};
{body}

void kopt(void **a, int nt, int64_t n0) {{
    const double *s = (const double *)a[{rows * n}];
    (void)n0;
    #pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (int64_t b = 0; b < {nb}; b++) {{
        const int64_t k = BLOCKS[b][0], lo = BLOCKS[b][1], hi = BLOCKS[b][2];
        switch (GROUP[k]) {{
{calls}
        }}
    }}
}}
"""


class _Plan:
    """The generated update of one optimizer: which parameters, their state tensors,
    the baked configuration and the native entry point."""

    def __init__(self, kind: str, opt: Any) -> None:
        self.kind = kind
        self.configs: list = []
        self.params: list = []          # (param, group index), in group order
        self.others: list = []          # parameters without a gradient (skipped)
        for gi, g in enumerate(opt.param_groups):
            cfg = _group_config(kind, g)
            if cfg is None:
                raise _Unfit("a parameter group the generated step does not cover")
            self.configs.append(cfg)
            for p in g["params"]:
                (self.params if p.grad is not None else self.others).append((p, gi))
        if not self.params:
            raise _Unfit("no parameter has a gradient")
        if len({c[4] for c in self.configs}) > 1 and kind == "adam":
            raise _Unfit("groups differ in amsgrad")
        p0 = self.params[0][0]
        if p0.dtype not in (ember.float32, ember.float64):
            raise _Unfit("parameters are not float32 or float64")
        self.dtype = p0.dtype
        n = len(self.params)
        state = opt.state
        self.names = (("exp_avg", "exp_avg_sq") +
                      (("max_exp_avg_sq",) if self.configs[0][4] else ())) \
            if kind == "adam" else \
            (("momentum_buffer",) if any(c[1] != 0 for c in self.configs) else ())
        self.state: list = []
        for p, gi in self.params:
            if p.dtype is not self.dtype or not _fits(p, p) or not _fits(p.grad, p) or \
                    p.grad.data_ptr() == p.data_ptr():
                raise _Unfit("parameters or gradients differ in dtype or layout")
            st = state.get(p)
            ts = tuple(st.get(nm) if st else None for nm in self.names)
            if kind == "sgd" and self.configs[gi][1] == 0:
                ts = ()
            if any(not _fits(t, p) for t in ts) or \
                    (kind == "adam" and (not st or type(st.get("step")) not in (int, float))):
                raise _Unfit("the optimizer state is not what the code reads")
            self.state.append(ts)
        if kind == "sgd" and self.names and any(not ts for ts in self.state):
            raise _Unfit("groups mix momentum and plain SGD")   # one row layout per code
        blocks = [(k, lo, min(lo + _BLOCK, p.numel()))
                  for k, (p, _) in enumerate(self.params) for lo in range(0, p.numel(), _BLOCK)]
        groups = [gi for _, gi in self.params]
        src = (_adam_source if kind == "adam" else _sgd_source)(
            _c_float(self.dtype), n, groups, self.configs, blocks)
        argv = cache.compiler_command()
        if argv is None:
            raise _Unfit("no C compiler")
        self.lib = cache.load(src, argv)
        self.n_groups = len(self.configs)
        self.scalars = array("d", [0.0] * (self.n_groups + (n if kind == "adam" else 0)))
        self.scalar_t = ember.frombuffer(self.scalars, dtype=ember.float64)
        rows = 2 + len(self.names)
        self.kernel = _cgrun.Kernel(ctypes.cast(self.lib.kopt, ctypes.c_void_p).value,
                                    rows * n + 1, [], 0)
        total = sum(p.numel() for p, _ in self.params)
        self.nt = 1 if total < _PAR_MIN else 0
        self.fixed = [p for p, _ in self.params]
        self.bumped = self.fixed + [t for ts in self.state for t in ts]

    def run(self, opt: Any) -> bool:
        """One step through the generated code; False (nothing done) when what the code
        assumes no longer holds."""
        groups = opt.param_groups
        if len(groups) != self.n_groups or opt._step_pre_hooks or opt._step_post_hooks:
            return False
        sc = self.scalars
        for gi, g in enumerate(groups):
            if _group_config(self.kind, g) != self.configs[gi]:
                return False
            sc[gi] = g["lr"]
        grads = []
        for p, _ in self.params:
            g = p.grad
            if g is None or not _fits(g, p):
                return False
            grads.append(g)
        for p, _ in self.others:
            if p.grad is not None:
                return False
        state = opt.state
        names = self.names
        steps = []
        for (p, _), ts in zip(self.params, self.state):
            st = state.get(p)
            if ts and (st is None or any(st.get(nm) is not t for nm, t in zip(names, ts))):
                return False
            if self.kind == "adam":
                step = st["step"]
                if type(step) not in (int, float):
                    return False
                steps.append(int(step) + 1)
        if steps:
            n = self.n_groups
            for k, s in enumerate(steps):
                sc[n + k] = s
        ins = self.fixed + grads + [t for i in range(len(names)) for t in
                                    (ts[i] for ts in self.state)] + [self.scalar_t]
        self.kernel.run_into(ins, [], self.nt)
        for t in self.bumped:
            t._bump_version()
        if steps:
            for (p, _), s in zip(self.params, steps):
                state[p]["step"] = s
        return True


class _Unfit(Exception):
    """The optimizer's configuration or state is not one the generated code covers."""


class FusedUpdate:
    """``optimizer.step()`` as a step of a compiled program: the generated update when
    it applies, else ``run(opt)`` (the eager step)."""

    __slots__ = ("opt", "run", "plan", "unfit", "calls")

    def __init__(self, opt: Any, run: Callable) -> None:
        self.opt, self.run = opt, run
        self.plan: _Plan | None = None
        self.unfit: str | None = None      # why no code was built (the last time tried)
        self.calls = 0                     # calls that ran the generated code

    def __call__(self) -> Any:
        opt = self.opt
        plan = self.plan
        if plan is not None:
            if plan.run(opt):
                opt._step_count = getattr(opt, "_step_count", 0) + 1
                self.calls += 1
                from ember import compiler
                compiler.counters["stats"]["fused_optimizer_steps"] += 1
                return None
            self.plan = None
        out = self.run(opt)
        self.prepare()
        return out

    def prepare(self) -> None:
        """Build the code from the optimizer's state as it is now (after an eager step)."""
        kind = _kind(self.opt)
        if kind is None:
            self.unfit = f"{type(self.opt).__name__} has no generated step"
            return
        if any(p.is_complex() for g in self.opt.param_groups for p in g["params"]):
            self.unfit = "complex parameters"
            return
        try:
            self.plan = _Plan(kind, self.opt)
            self.unfit = None
        except _Unfit as e:
            self.unfit = str(e)
        except (OSError, RuntimeError, ValueError) as e:   # the build failed: eager steps
            self.unfit = f"the generated step could not be built: {e}"
