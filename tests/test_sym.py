"""Symbolic scalars: the Python-number contract, the expressions built, ShapeEnv guards."""

import math
import operator

import pytest

pytest.importorskip("sympy")

from ember._sym import (
    GuardOnDataDependentSymNode,
    ShapeEnv,
    SymBool,
    SymFloat,
    SymInt,
    sym_float,
    sym_int,
    sym_ite,
    sym_max,
    sym_min,
    sym_not,
    sym_sum,
)


@pytest.fixture
def env():
    return ShapeEnv()


def hint(x):
    return x.node.hint if hasattr(x, "node") else x


# -- the Python-number contract ------------------------------------------------

INT_OPS = [operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
           operator.truediv, operator.pow]


@pytest.mark.parametrize("op", INT_OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("a,b", [(7, 3), (8, 2), (5, 7), (6, -4), (9, 0.5)])
def test_arithmetic_matches_python(env, op, a, b):
    s = env.create_symint(a)
    if op is operator.pow and isinstance(b, int) and b < 0:
        expected = op(a, b)
    else:
        expected = op(a, b)
    got = op(s, b)
    assert isinstance(got, SymFloat if isinstance(expected, float) else SymInt)
    assert hint(got) == pytest.approx(expected)
    if b != 0:
        rgot = op(b, s)
        rexpected = op(b, a)
        assert isinstance(rgot, SymFloat if isinstance(rexpected, float) else SymInt)
        assert hint(rgot) == pytest.approx(rexpected)


def test_sym_sym_arithmetic_and_promotion(env):
    a, b = env.create_symint(6), env.create_symint(4)
    assert isinstance(a + b, SymInt) and hint(a + b) == 10
    assert isinstance(a / b, SymFloat) and hint(a / b) == 1.5
    assert isinstance(a * 1.5, SymFloat) and hint(a * 1.5) == 9.0
    f = env.create_symfloat(2.5)
    assert isinstance(a + f, SymFloat) and hint(a + f) == 8.5
    assert isinstance(f // 2, SymFloat) and hint(f // 2) == 1.0
    assert isinstance(-a, SymInt) and hint(-a) == -6
    assert isinstance(abs(-a), SymInt) and hint(abs(-a)) == 6
    assert +a is a


def test_python_semantics_of_floordiv_and_mod_signs(env):
    s = env.create_symint(7)
    for b in (3, -3):
        assert hint(s // b) == 7 // b
        assert hint(s % b) == 7 % b
        assert hint(-s // b) == -7 // b
        assert hint(-s % b) == -7 % b


@pytest.mark.parametrize("v", [7, 12, 5])
def test_divmod_shifts_invert(env, v):
    s = env.create_symint(v)
    q, r = divmod(s, 3)
    assert (hint(q), hint(r)) == divmod(v, 3)
    q, r = divmod(20, s)
    assert (hint(q), hint(r)) == divmod(20, v)
    assert hint(s << 3) == v << 3 and hint(s >> 1) == v >> 1 and hint(-s >> 1) == -v >> 1
    assert hint(~s) == ~v
    with pytest.raises(ValueError):
        s << -1


def test_negative_exponent_gives_float(env):
    s = env.create_symint(2)
    r = s ** -2
    assert isinstance(r, SymFloat) and hint(r) == 0.25


@pytest.mark.parametrize("op", [operator.eq, operator.ne, operator.lt, operator.le,
                                operator.gt, operator.ge], ids=lambda f: f.__name__)
def test_comparisons_give_symbool(env, op):
    s = env.create_symint(5)
    for other in (3, 5, 8, 5.0, env.create_symint(6)):
        r = op(s, other)
        assert isinstance(r, SymBool)
        assert bool(r) == op(5, hint(other))


def test_unsupported_operands_return_notimplemented(env):
    s = env.create_symint(5)
    assert s.__add__("a") is NotImplemented
    assert s.__mul__([1]) is NotImplemented
    assert s.__lt__(None) is NotImplemented
    with pytest.raises(TypeError):
        s + "a"
    with pytest.raises(TypeError):
        "a" * 1.5 + s
    with pytest.raises(TypeError):
        s < "x"
    assert (s == "x") is False  # falls back to identity, like int == str
    b = s > 2
    assert b.__and__(3) is NotImplemented
    with pytest.raises(TypeError):
        ~b


def test_index_int_bool_and_guards(env):
    s = env.create_symint(4)
    assert operator.index(s) == 4
    assert list(range(s)) == [0, 1, 2, 3]
    assert [10, 20, 30, 40, 50][s] == 50
    assert int(s + 1) == 5
    assert float(s) == 4.0
    assert bool(s) is True          # s != 0 is known (sizes >= 2): no guard
    assert "Eq(s0, 4)" in env.format_guards()
    assert "Eq(s0 + 1, 5)" in env.format_guards()
    f = sym_float(s) / 3
    assert float(f) == pytest.approx(4 / 3)
    assert math.floor(f) .node.hint == 1 and isinstance(math.floor(f), SymInt)
    assert math.ceil(f).node.hint == 2
    assert math.trunc(-f).node.hint == -1
    assert round(s) is s


def test_hashing_rules_as_pytorch(env):
    s = env.create_symint(4)
    with pytest.raises(TypeError, match="unhashable"):
        hash(s)
    f = env.create_symfloat(1.5)
    assert hash(f) == hash(1.5)     # forces specialisation
    assert any("f0" in g for g in env.format_guards())
    b = s > 10
    assert hash(b) == hash(False)
    assert hash(SymBool(s.node.wrap_const(True))) == hash(True)


def test_hashing_matches_torch():
    torch = pytest.importorskip("torch")
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import ShapeEnv as TShapeEnv

    tenv = TShapeEnv()
    tsym = tenv.create_symintnode(tenv.create_symbol(4, ConstantSource("x")), hint=4)
    assert isinstance(tsym / 3, torch.SymFloat) and isinstance(tsym * 2, torch.SymInt)
    with pytest.raises(TypeError):
        hash(tsym)
    with pytest.raises(TypeError):
        hash(ShapeEnv().create_symint(4))
    assert isinstance(torch.sym_max(3, 4.0), float) and isinstance(sym_max(3, 4.0), float)


def test_repr_and_sympy_interop(env):
    s = env.create_symint(8)
    assert repr(s * 2 + 1) == "2*s0 + 1"
    assert str(s) == "s0"
    import sympy

    assert sympy.sympify(s + 1) == s.node.expr + 1


# -- helpers ------------------------------------------------------------------

def test_helpers_fall_back_to_plain_python():
    assert sym_int(3.7) == 3 and type(sym_int(3.7)) is int
    assert sym_float(3) == 3.0 and type(sym_float(3)) is float
    assert sym_max(2, 5) == 5 and type(sym_max(2, 5)) is int
    assert sym_max(2, 5.0) == 5.0 and type(sym_max(2, 1.0)) is float
    assert sym_min(2, 5) == 2
    assert sym_sum([1, 2, 3]) == 6 and sym_sum(1, 2, 3) == 6
    assert sym_sum([0.5, 1]) == 1.5
    assert sym_not(True) is False
    assert sym_ite(True, 1, 2) == 1 and sym_ite(False, 1, 2) == 2
    with pytest.raises(TypeError):
        sym_ite(1, 1, 2)
    with pytest.raises(TypeError):
        sym_max("a", 1)


def test_helpers_match_torch_on_plain_numbers():
    torch = pytest.importorskip("torch")
    for a, b in [(2, 5), (2, 5.0), (-1.5, 3)]:
        assert sym_max(a, b) == torch.sym_max(a, b)
        assert type(sym_max(a, b)) is type(torch.sym_max(a, b))
        assert sym_min(a, b) == torch.sym_min(a, b)
    assert sym_int(-2.5) == torch.sym_int(-2.5)
    assert sym_float(7) == torch.sym_float(7)
    assert sym_sum([1, 2, 3]) == torch.sym_sum([1, 2, 3])
    assert sym_not(False) == torch.sym_not(False)


def test_helpers_build_symbolic_expressions(env):
    import sympy

    a, b = env.create_symint(3), env.create_symint(7)
    m = sym_max(a, b)
    assert isinstance(m, SymInt) and isinstance(m.node.expr, sympy.Max) and hint(m) == 7
    m = sym_min(a, 2.5)
    assert isinstance(m, SymFloat) and hint(m) == 2.5
    f = sym_float(a)
    assert isinstance(f, SymFloat) and hint(f) == 3.0
    i = sym_int(sym_float(b) / 2)
    assert isinstance(i, SymInt) and hint(i) == 3
    c = a < b
    n = sym_not(c)
    assert isinstance(n, SymBool) and isinstance(n.node.expr, sympy.Not) or \
        n.node.expr == (a.node.expr >= b.node.expr)
    assert n.node.hint is False
    t = sym_ite(c, a, b)
    assert isinstance(t, SymInt) and isinstance(t.node.expr, sympy.Piecewise) and hint(t) == 3
    assert isinstance(sym_float(c), SymFloat) and hint(sym_float(c)) == 1.0
    both = (a > 1) & (b > 1)
    assert isinstance(both, SymBool) and isinstance(both.node.expr, sympy.And)
    either = (a > 5) | True
    assert isinstance(either, SymBool) and bool(either)


def test_sym_sum_is_one_nary_node(env):
    import sympy

    xs = [env.create_symint(v) for v in (2, 3, 4, 5)]
    s = sym_sum(xs + [7])
    assert isinstance(s, SymInt)
    assert isinstance(s.node.expr, sympy.Add)
    assert len(s.node.expr.args) == 5          # one node: s0 + s1 + s2 + s3 + 7
    assert hint(s) == 21
    # a chain of binary adds nests (before sympy flattening) - sym_sum builds one node
    assert sym_sum(*xs).node.expr == sum(x.node.expr for x in xs)


# -- ShapeEnv -----------------------------------------------------------------

def test_shape_env_symbols_and_specialisation(env):
    assert env.create_symint(0) == 0 and type(env.create_symint(1)) is int
    s, t, u = env.create_symint(5), env.create_symint(5), env.create_symint(6)
    assert s.node.expr is t.node.expr     # duck shapes: same value, same symbol
    assert s.node.expr is not u.node.expr
    no_duck = ShapeEnv(duck_shape=False)
    assert no_duck.create_symint(5).node.expr != no_duck.create_symint(5).node.expr
    sizes = env.create_symbolic_sizes([1, 5, 9])
    assert sizes[0] == 1 and isinstance(sizes[1], SymInt) and isinstance(sizes[2], SymInt)
    with pytest.raises(ValueError):
        env.create_symbol(-1)


def test_static_facts_need_no_guard(env):
    s = env.create_symint(5)
    assert bool(s >= 2) and bool(s != 1) and not bool(s == 0)
    assert env.format_guards() == []


def test_guards_recorded_and_checked(env):
    s = env.create_symint(8)
    if s > 4:
        pass
    assert env.format_guards() == ["s0 > 4"]
    assert env.check_guards({"s0": 16}) is True
    assert env.check_guards({"s0": 3}) is False
    int(s * 2)
    assert env.format_guards()[-1] == "Eq(2*s0, 16)"
    assert env.check_guards({"s0": 8}) and not env.check_guards({"s0": 9})
    f = sym_float(s) / 3
    float(f)
    assert env.check_guards({"s0": 8})


def test_unbacked_symint_is_data_dependent(env):
    u = env.create_unbacked_symint()
    assert repr(u + 1) == "u0 + 1"
    with pytest.raises(GuardOnDataDependentSymNode, match="data-dependent"):
        bool(u > 2)
    with pytest.raises(GuardOnDataDependentSymNode):
        int(u)
    sl = env.create_unbacked_symint(size_like=True)
    assert bool(sl >= 0)   # size-like: known non-negative without a hint


def test_check_accepts_symbool(env):
    from ember._check import _check, _check_value

    s = env.create_symint(4)
    _check(s > 2, "fine")
    with pytest.raises(ValueError, match="too small"):
        _check_value(s > 10, lambda: "too small")
    assert "s0 > 10" in " ".join(env.format_guards()) or "s0 <= 10" in " ".join(
        env.format_guards())


def test_sympy_not_imported_by_the_module():
    import subprocess
    import sys

    code = ("import sys; import ember._sym as s; "
            "assert 'sympy' not in sys.modules, 'sympy imported eagerly'; "
            "s.ShapeEnv().create_symint(3); assert 'sympy' in sys.modules")
    import os

    import ember._sym

    root = os.path.dirname(os.path.dirname(os.path.abspath(ember._sym.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
