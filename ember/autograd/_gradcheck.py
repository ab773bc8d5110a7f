"""``gradcheck`` / ``gradgradcheck``: compare analytical gradients with central finite
differences (use float64 inputs)."""
from __future__ import annotations

import random as _random
import warnings

from ember._C.core import TensorBase, zeros_like
from ember.autograd.grad_mode import enable_grad, no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck when a check fails."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (tuple(x) if isinstance(x, list) else (x,))


def _elem(t, j):
    """A 0-dim view of the ``j``-th element (row-major) of ``t``, whatever its strides."""
    shape = tuple(t.shape)
    idx = []
    for s in reversed(shape):
        idx.append(j % s)
        j //= s
    v = t
    for i in reversed(idx):
        v = v.select(0, i)
    return v


def _flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()] if t.numel() else []


def _numerical(func, inputs, diff_idx, eps, n_out_elems):
    """jac[i][k][j] = d out_k / d input_i[j] (outputs flattened and concatenated)."""
    jac = []
    for i in diff_idx:
        x = inputs[i]
        cols = []
        xd = x.detach()
        for j in range(x.numel()):
            e = _elem(xd, j)
            orig = float(e.item())
            with no_grad():
                e.fill_(orig + eps)
            plus = _out_values(func(*inputs))
            with no_grad():
                e.fill_(orig - eps)
            minus = _out_values(func(*inputs))
            with no_grad():
                e.fill_(orig)
            cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        jac.append([[cols[j][k] for j in range(len(cols))] for k in range(n_out_elems)])
    return jac


def _out_values(out):
    vals = []
    for o in _as_tuple(out):
        if isinstance(o, TensorBase) and o.is_floating_point():
            vals.extend(_flat(o))
    return vals


def _analytical(outputs, inputs, diff_idx):
    from ember.autograd import grad as _grad
    diff_inputs = [inputs[i] for i in diff_idx]
    rows = [[] for _ in diff_idx]   # rows[i][k] = list over j
    for o in outputs:
        if not (isinstance(o, TensorBase) and o.is_floating_point()):
            continue
        for k in range(o.numel()):
            if not o.requires_grad:
                for r, x in zip(rows, diff_inputs):
                    r.append([0.0] * x.numel())
                continue
            go = zeros_like(o)
            _elem(go, k).fill_(1.0)
            gs = _grad([o], diff_inputs, [go], retain_graph=True, allow_unused=True)
            for r, g, x in zip(rows, gs, diff_inputs):
                r.append(_flat(g) if g is not None else [0.0] * x.numel())
    return rows


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """True when the gradients of ``func`` at ``inputs`` match finite differences:
    ``|analytical - numerical| <= atol + rtol * |numerical|`` everywhere."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, TensorBase) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i in diff_idx:
        if str(inputs[i].dtype) != "ember.float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          f"point. This check will likely fail if all the inputs are not of "
                          f"double precision floating point.", UserWarning, stacklevel=2)
    with enable_grad():
        outputs = _as_tuple(func(*inputs))
    n_out = sum(o.numel() for o in outputs if isinstance(o, TensorBase) and
                o.is_floating_point())
    analytical = _analytical(outputs, inputs, diff_idx)
    numerical = _numerical(func, inputs, diff_idx, eps, n_out)
    # output boundaries for messages
    bounds = []
    start = 0
    for oi, o in enumerate(outputs):
        if isinstance(o, TensorBase) and o.is_floating_point():
            bounds.append((oi, start, start + o.numel()))
            start += o.numel()
    for pos, i in enumerate(diff_idx):
        a, n = analytical[pos], numerical[pos]
        for oi, s, e in bounds:
            bad = False
            for k in range(s, e):
                for av, nv in zip(a[k], n[k]):
                    if not abs(av - nv) <= atol + rtol * abs(nv):
                        bad = True
                        break
                if bad:
                    break
            if bad:
                msg = (f"Jacobian mismatch for output {oi} with respect to input {i},\n"
                       f"numerical:{_fmt(n[s:e])}\nanalytical:{_fmt(a[s:e])}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def _fmt(rows):
    # transpose to PyTorch's layout: rows = input elements, columns = output elements
    if not rows:
        return "[]"
    cols = list(zip(*rows))
    return "\n" + "\n".join("  [" + ", ".join(f"{v:.6g}" for v in c) + "]" for c in cols)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False):
    """gradcheck of the gradients of ``func`` (second derivatives), with random (or
    given) ``grad_outputs`` that are themselves differentiated."""
    from ember._C.core import tensor
    from ember.autograd import grad as _grad
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        with enable_grad():
            outs = _as_tuple(func(*inputs))
        rng = _random.Random(0)
        grad_outputs = []
        for o in outs:
            if isinstance(o, TensorBase) and o.is_floating_point() and o.requires_grad:
                vals = [rng.uniform(-1, 1) for _ in range(o.numel())]
                g = tensor(vals, dtype=o.dtype).reshape(tuple(o.shape)) if o.numel() else \
                    zeros_like(o)
                grad_outputs.append(g.detach().requires_grad_(True))
    grad_outputs = list(_as_tuple(grad_outputs))
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, TensorBase) and x.requires_grad]

    def new_func(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _as_tuple(func(*ins))
                if isinstance(o, TensorBase) and o.is_floating_point() and o.requires_grad]
        diff = [ins[i] for i in diff_idx]
        gs = _grad(outs, diff, list(gos), create_graph=True, allow_unused=True)
        return tuple(g if g is not None else zeros_like(x) for g, x in zip(gs, diff))

    return gradcheck(new_func, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
