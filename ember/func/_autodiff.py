"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` and
``linearize`` on ember's autograd: reverse mode records the graph with
``create_graph=True`` and forward mode runs on ``ember.autograd.forward_ad``, so the
transforms nest (``jacrev(jacrev(f))``, ``jacfwd(jacrev(f))``, ``vmap(grad(f))``)."""
from __future__ import annotations

import contextlib
import functools
from typing import Callable

import ember
from ember._C.core import TensorBase
from ember.autograd import forward_ad as fwAD
from ember.autograd.grad_mode import enable_grad
from ember.func import _batched
from ember.func._tree import flatten, unflatten
from ember.func._vmap import _RefuseRandom

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]


def _argnums_tuple(argnums, nargs, fn_name):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError(f"{fn_name}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"{fn_name}: argnums must be int or Tuple[int, ...], got: "
                               f"{type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnums={a}, but only {nargs} positional inputs")
    return tuple(a % nargs for a in nums)


def _prep(x, fn_name):
    """A differentiable stand-in for input ``x``: connected to ``x`` when an enclosing
    transform (or the caller) tracks it, a fresh leaf otherwise."""
    if not isinstance(x, TensorBase):
        raise ValueError(f"{fn_name}: expected the differentiated inputs to be Tensors, got "
                         f"{type(x).__name__}")
    if not x.is_floating_point():
        raise RuntimeError(f"{fn_name}: only Tensors of floating point dtype can require "
                           f"gradients, got {x.dtype}")
    if _batched.active():
        return _batched.prep_leaf(x)
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)


def _tracks_outside(outs, ours) -> bool:
    """Whether the graph of ``outs`` reaches a leaf other than ``ours`` (a tensor of the
    caller or of an enclosing transform): then results keep their graph."""
    if _batched.active():
        outs = [_batched.to_base(o) for o in outs]
        ours = [_batched.to_base(x) for x in ours]
    ids = {id(x) for x in ours}
    stack = [o.grad_fn for o in outs if isinstance(o, TensorBase) and o.grad_fn is not None]
    seen = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        var = getattr(n, "variable", None)
        if var is not None:
            if id(var) not in ids:
                return True
            continue
        stack.extend(e[0] for e in getattr(n, "_next", ()) or () if e is not None)
    return False


def _finish(t, keep):
    if not isinstance(t, TensorBase):
        return t
    return t if keep else t.detach()


def _split_aux(out, has_aux, fn_name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fn_name}(f, ...)(*args): output of function f should be a tuple: "
                           f"(output, aux) if has_aux is True")
    return out


def _grads(outputs, inputs, cotangents):
    if _batched.active():
        return _batched.grads(outputs, inputs, cotangents)
    outs, cots = [], []
    for o, c in zip(outputs, cotangents):
        if isinstance(o, TensorBase) and o.requires_grad:
            outs.append(o)
            cots.append(c)
    if not outs:
        return [None] * len(inputs)
    return list(ember.autograd.grad(outs, inputs, cots, create_graph=True, allow_unused=True))


def grad_and_value(func: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to ``args[argnums]`` together with its value.

    Returns a function giving ``(grad, value)`` (``((grad, (value, aux)))`` with
    ``has_aux``); ``grad`` has the structure of the chosen argument(s).
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        with enable_grad():
            args = list(args)
            trees, specs = [], []
            for a in nums:
                leaves, spec = flatten(args[a])
                leaves = [_prep(x, "grad_and_value") for x in leaves]
                args[a] = unflatten(leaves, spec)
                trees.append(leaves)
                specs.append(spec)
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, TensorBase):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.numel() != 1:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe "
                                   f"you wanted to use the vjp or jacrev APIs instead?")
            flat_in = [x for leaves in trees for x in leaves]
            keep = _tracks_outside([out], flat_in)
            gs = _grads([out], flat_in, [ember.ones_like(out)])
        gs = [_finish(g if g is not None else ember.zeros_like(x), keep)
              for g, x in zip(gs, flat_in)]
        res, k = [], 0
        for leaves, spec in zip(trees, specs):
            res.append(unflatten(gs[k:k + len(leaves)], spec))
            k += len(leaves)
        g = res[0] if not isinstance(argnums, tuple) else tuple(res)
        value = _finish(out, keep)
        if has_aux:
            aux = unflatten([_finish(x, keep) for x in flatten(aux)[0]], flatten(aux)[1])
            return g, (value, aux)
        return g, value
    return wrapper


def grad(func: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar ``func`` with respect to ``args[argnums]`` (PyTorch's
    ``torch.func.grad``); with ``has_aux`` returns ``(grad, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns one gradient per primal
    (the vector-Jacobian product); with ``has_aux`` also the auxiliary output."""
    with enable_grad():
        leaves, spec = flatten(primals)
        leaves = [_prep(x, "vjp") for x in leaves]
        out, aux = _split_aux(func(*unflatten(leaves, spec)), has_aux, "vjp")
    out_leaves, out_spec = flatten(out)
    keep = _tracks_outside(out_leaves, leaves)
    for o in out_leaves:
        if not isinstance(o, TensorBase):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has only "
                               f"Tensor outputs, got {type(o)}")

    def vjp_fn(cotangents):
        cot_leaves, cot_spec = flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function, got "
                               f"{len(cot_leaves)} leaves and {len(out_leaves)} outputs")
        for c, o in zip(cot_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output has a shape of "
                                   f"{tuple(c.shape)} and output has a shape of "
                                   f"{tuple(o.shape)}.")
        with enable_grad():
            gs = _grads(out_leaves, leaves, cot_leaves)
        keep_g = keep or any(c.requires_grad for c in cot_leaves)
        gs = [_finish(g if g is not None else ember.zeros_like(x), keep_g)
              for g, x in zip(gs, leaves)]
        return unflatten(gs, spec)

    res_out = unflatten([_finish(o, keep) for o in out_leaves], out_spec)
    if has_aux:
        return res_out, vjp_fn, aux
    return res_out, vjp_fn


def jvp(func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False,
        has_aux: bool = False):
    """``(func(*primals), J @ tangents)``, by forward-mode AD."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be "
                           "tuples")
    p_leaves, p_spec = flatten(primals)
    t_leaves, _ = flatten(tangents)
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure")
    with enable_grad(), fwAD.dual_level():
        make_dual = _batched.make_dual if _batched.active() else fwAD.make_dual
        duals = [make_dual(p, t) for p, t in zip(p_leaves, t_leaves)]
        out, aux = _split_aux(func(*unflatten(duals, p_spec)), has_aux, "jvp")
        o_leaves, o_spec = flatten(out)
        keep = any(t.requires_grad for t in t_leaves) or _tracks_outside(o_leaves, duals)
        prim, tang = [], []
        for o in o_leaves:
            if not isinstance(o, TensorBase):
                raise RuntimeError(f"jvp(f, primals, tangents): Expected f to be a function "
                                   f"that has only Tensor outputs, got {type(o)}")
            p, t = _batched.unpack_dual(o) if _batched.active() else fwAD.unpack_dual(o)
            prim.append(_finish(p, keep))
            tang.append(_finish(t, keep) if t is not None else ember.zeros_like(p).detach())
    res = unflatten(prim, o_spec), unflatten(tang, o_spec)
    return (*res, aux) if has_aux else res


def linearize(func: Callable, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian-vector
    product at ``primals``."""
    out = jvp(func, primals, tuple(ember.zeros_like(p) for p in flatten(primals)[0]))[0]

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def _jac_assemble(rows, out_shape, in_shape):
    """Stack per-element rows (each of shape ``in_shape`` for jacrev) into out + in."""
    shape = tuple(out_shape) + tuple(in_shape)
    if not rows:
        return ember.zeros(shape)
    return ember.stack(rows, 0).reshape(shape)


def jacrev(func: Callable, argnums: int | tuple = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by reverse mode: for
    each output a tensor of shape ``output.shape + input.shape``."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        with enable_grad():
            args = list(args)
            ins = []
            for a in nums:
                args[a] = _prep(args[a], "jacrev")
                ins.append(args[a])
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "jacrev")
            o_leaves, o_spec = flatten(out)
            keep = _tracks_outside(o_leaves, ins)
            jac_per_out = []
            for o in o_leaves:
                flat = o.reshape(-1)
                rows = [[] for _ in ins]
                for k in range(o.numel()):
                    gs = _grads([flat[k]], ins, [ember.ones_like(flat[k])]) \
                        if o.requires_grad else [None] * len(ins)
                    for j, (g, x) in enumerate(zip(gs, ins)):
                        rows[j].append(g if g is not None else ember.zeros_like(x))
                jac = tuple(_finish(_jac_assemble(r, o.shape, x.shape), keep)
                            for r, x in zip(rows, ins))
                jac_per_out.append(jac if isinstance(argnums, tuple) else jac[0])
        res = unflatten(jac_per_out, o_spec)
        if has_aux:
            return res, unflatten([_finish(x, keep) for x in flatten(aux)[0]], flatten(aux)[1])
        return res
    return wrapper


def jacfwd(func: Callable, argnums: int | tuple = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by forward mode (one
    Jacobian-vector product per input element)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        ins = [args[a] for a in nums]
        for x in ins:
            _prep(x, "jacfwd")          # type and dtype checks

        def f_of(*xs):
            full = list(args)
            for a, x in zip(nums, xs):
                full[a] = x
            return func(*full, **kwargs)

        # One Jacobian-vector product per basis vector: like vmap over the basis, random
        # ops are refused ("error"), independent ("different") or replayed ("same").
        rng = ember.get_rng_state() if randomness == "same" else None
        per_input, value, aux = [], None, None
        for j, x in enumerate(ins):
            cols = []
            for k in range(x.numel()):
                tangents = [ember.zeros_like(y) for y in ins]
                tangents[j] = ember.zeros(x.numel(), dtype=x.dtype)
                tangents[j][k] = 1
                tangents[j] = tangents[j].reshape(x.shape)
                if rng is not None:
                    ember.set_rng_state(rng)
                with _RefuseRandom() if randomness == "error" else contextlib.nullcontext():
                    r = jvp(f_of, tuple(ins), tuple(tangents), has_aux=has_aux)
                value, cols_k = r[0], r[1]
                aux = r[2] if has_aux else None
                cols.append(flatten(cols_k))
            per_input.append(cols)
        o_leaves, o_spec = flatten(value if value is not None else func(*args, **kwargs))
        jac_per_out = []
        for i, o in enumerate(o_leaves):
            jac = []
            for x, cols in zip(ins, per_input):
                if cols:
                    m = ember.stack([c[0][i] for c in cols], -1)
                    jac.append(m.reshape(tuple(o.shape) + tuple(x.shape)))
                else:
                    jac.append(ember.zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype))
            jac_per_out.append(tuple(jac) if isinstance(argnums, tuple) else jac[0])
        res = unflatten(jac_per_out, o_spec)
        return (res, aux) if has_aux else res
    return wrapper


def hessian(func: Callable, argnums: int | tuple = 0) -> Callable:
    """The Hessian of a scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


