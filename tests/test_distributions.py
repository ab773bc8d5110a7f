"""ember.distributions against torch.distributions: log_prob, entropy, moments, cdf/icdf,
gradients, KL, transforms, validation errors; sample moments within statistical tolerance."""
import math

import numpy as np
import pytest

import ember
import ember.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

RNG = np.random.default_rng(0)
POS = RNG.uniform(0.5, 3.0, (2, 3))
POS2 = RNG.uniform(0.5, 3.0, (2, 3))
REAL = RNG.standard_normal((2, 3))
PROB = RNG.uniform(0.1, 0.9, (2, 3))
SIMPLEX = RNG.dirichlet(np.ones(4), 3)
SPD = (lambda a: a @ a.T + 2 * np.eye(3))(RNG.standard_normal((3, 3)))

# name: (params, value for log_prob, constructor kwargs names)
CASES = {
    "Normal": ((REAL, POS), REAL + 0.3),
    "Uniform": ((REAL, REAL + POS), REAL + 0.4 * POS),
    "Exponential": ((POS,), POS2),
    "Laplace": ((REAL, POS), POS2),
    "Cauchy": ((REAL, POS), POS2),
    "LogNormal": ((REAL, POS), POS2),
    "HalfNormal": ((POS,), POS2),
    "HalfCauchy": ((POS,), POS2),
    "Gumbel": ((REAL, POS), POS2),
    "Pareto": ((POS, POS2), POS + POS2),
    "Weibull": ((POS, POS2), POS2),
    "Gamma": ((POS, POS2), POS2),
    "Chi2": ((POS,), POS2),
    "Beta": ((POS, POS2), PROB),
    "StudentT": ((POS + 2, REAL, POS), POS2),
    "Dirichlet": ((SIMPLEX * 5 + 0.5,), SIMPLEX),
    "Bernoulli": ((PROB,), (PROB > 0.5).astype(float)),
    "Geometric": ((PROB,), np.floor(POS2)),
    "Poisson": ((POS,), np.floor(POS2 * 2)),
    "Binomial": ((np.full((2, 3), 7.0), PROB), np.floor(POS2 * 2)),
    "NegativeBinomial": ((POS, PROB), np.floor(POS2 * 2)),
    "Categorical": ((SIMPLEX,), np.array([0.0, 3.0, 1.0])),
    "OneHotCategorical": ((SIMPLEX,), np.eye(4)[[0, 3, 1]]),
    "ContinuousBernoulli": ((np.array([[0.2, 0.4995, 0.7], [0.5, 0.9, 0.05]]),), PROB),
    "Kumaraswamy": ((POS, POS2), PROB),
    "FisherSnedecor": ((POS + 4, POS2 + 5), POS2),
    "RelaxedBernoulli": ((np.array(0.7), PROB), PROB),
    "RelaxedOneHotCategorical": ((np.array(0.7), SIMPLEX), SIMPLEX),
    "InverseGamma": ((POS + 2, POS2), POS2),
    # float32: torch's own GeneralizedPareto fails on float64 parameters
    "GeneralizedPareto": (tuple(a.astype(np.float32) for a in (
        REAL, POS, np.array([[0.2, -0.3, 0.0], [0.1, -0.1, 0.3]]))),
        (REAL + 0.3 * POS).astype(np.float32)),
}
CDF = {"Normal", "Uniform", "Exponential", "Laplace", "Cauchy", "LogNormal", "HalfNormal",
       "HalfCauchy", "Gumbel", "Pareto", "Weibull", "ContinuousBernoulli", "Kumaraswamy",
       "Gamma", "Chi2", "GeneralizedPareto"}
# torch has no entropy for these either
NO_ENTROPY = {"Poisson", "NegativeBinomial", "FisherSnedecor", "RelaxedBernoulli",
              "RelaxedOneHotCategorical"}
PROB_PARAM = {"Bernoulli", "Geometric", "Categorical", "OneHotCategorical",
              "ContinuousBernoulli"}


def _make(lib, name, params, grad=False):
    mod = ember if lib is D else torch
    ts = [mod.tensor(p, requires_grad=grad) for p in params]
    if name in PROB_PARAM:
        return getattr(lib, name)(probs=ts[0]), ts
    if name in ("Binomial", "NegativeBinomial", "RelaxedBernoulli",
                "RelaxedOneHotCategorical"):
        return getattr(lib, name)(ts[0], probs=ts[1]), ts[1:]
    return getattr(lib, name)(*ts), ts


def _close(a, b, rtol=1e-7, atol=1e-9):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_entropy_moments_match_torch(name):
    params, value = CASES[name]
    de, pe = _make(D, name, params, grad=True)
    dt, pt = _make(TD, name, params, grad=True)
    assert tuple(de.batch_shape) == tuple(dt.batch_shape)
    assert tuple(de.event_shape) == tuple(dt.event_shape)
    lpe = de.log_prob(ember.tensor(value))
    lpt = dt.log_prob(torch.tensor(value))
    _close(lpe, lpt, rtol=1e-6)
    for attr in ("mean", "variance", "mode"):
        try:
            t = getattr(dt, attr)
        except NotImplementedError:
            continue
        _close(getattr(de, attr), t, rtol=1e-6)
    if name not in NO_ENTROPY:
        _close(de.entropy(), dt.entropy(), rtol=1e-6, atol=1e-8)
    # gradients of log_prob (+ entropy) with respect to the parameters
    loss_e = lpe.sum() + (de.entropy().sum() if name not in NO_ENTROPY else 0)
    loss_t = lpt.sum() + (dt.entropy().sum() if name not in NO_ENTROPY else 0)
    loss_e.backward()
    loss_t.backward()
    for a, b in zip(pe, pt):
        if b.grad is not None:
            _close(a.grad, b.grad, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("name", sorted(CDF))
def test_cdf_icdf_match_torch(name):
    params, value = CASES[name]
    de, _ = _make(D, name, params)
    dt, _ = _make(TD, name, params)
    _close(de.cdf(ember.tensor(value)), dt.cdf(torch.tensor(value)), rtol=1e-6, atol=1e-9)
    try:
        qt = dt.icdf(torch.tensor(PROB))
    except NotImplementedError:
        return
    _close(de.icdf(ember.tensor(PROB)), qt, rtol=1e-6, atol=1e-9)


MOMENTS = ["Normal", "Uniform", "Exponential", "Laplace", "LogNormal", "HalfNormal", "Gumbel",
           "Weibull", "Gamma", "Chi2", "Beta", "StudentT", "Dirichlet", "Bernoulli",
           "Geometric", "Poisson", "Binomial", "NegativeBinomial", "OneHotCategorical",
           "ContinuousBernoulli", "Kumaraswamy", "FisherSnedecor", "InverseGamma",
           "GeneralizedPareto"]


@pytest.mark.parametrize("name", MOMENTS)
def test_sample_moments(name):
    ember.manual_seed(1)
    params, _ = CASES[name]
    d, _ = _make(D, name, params)
    n = 20000
    x = d.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert bool(d.support.check(x).all())
    mean, var = d.mean.numpy(), d.variance.numpy()
    if name == "LogNormal":        # heavy tailed: check log(x) ~ Normal(loc, scale)
        x, mean, var = x.log(), d.loc.numpy(), d.scale.numpy() ** 2
    m = x.numpy().mean(0)
    # mean within 6 standard errors; variance within 15%
    assert np.all(np.abs(m - mean) <= 6 * np.sqrt(var / n) + 1e-12), (m, mean)
    # heavy tails (FisherSnedecor: d2 < 8 here, so the sample variance has no finite variance)
    if name not in ("StudentT", "InverseGamma", "GeneralizedPareto", "FisherSnedecor"):
        np.testing.assert_allclose(x.numpy().var(0), var, rtol=0.15)


def test_categorical_and_multinomial_samples():
    ember.manual_seed(2)
    c = D.Categorical(probs=ember.tensor(SIMPLEX))
    x = c.sample((30000,))
    freq = np.stack([(x.numpy() == k).mean(0) for k in range(4)], -1)
    np.testing.assert_allclose(freq, SIMPLEX, atol=0.02)
    m = D.Multinomial(10, probs=ember.tensor(SIMPLEX))
    s = m.sample((5000,))
    assert bool((s.sum(-1) == 10).all())
    np.testing.assert_allclose(s.numpy().mean(0), 10 * SIMPLEX, atol=0.15)
    mt = TD.Multinomial(10, probs=torch.tensor(SIMPLEX))
    v = np.array([[3.0, 3, 2, 2], [10, 0, 0, 0], [1, 2, 3, 4]])
    _close(m.log_prob(ember.tensor(v)), mt.log_prob(torch.tensor(v)))
    _close(m.entropy(), mt.entropy(), rtol=1e-6)


def test_rsample_is_reparameterised():
    ember.manual_seed(3)
    for cls, args, dmean in [
        (D.Normal, (1.5, 2.0), lambda a, b: (1.0, 0.0)),
        (D.Exponential, (2.0,), lambda r: (-1 / r ** 2,)),
        (D.Gamma, (2.5, 1.5), lambda a, b: (1 / b, -a / b ** 2)),
        (D.Gamma, (0.4, 1.0), lambda a, b: (1 / b, -a / b ** 2)),
        (D.Beta, (2.0, 3.0), lambda a, b: (b / (a + b) ** 2, -a / (a + b) ** 2)),
        (D.ContinuousBernoulli, (0.3,), lambda p: (_cb_mean_grad(p),)),
    ]:
        ps = [ember.tensor(float(a), dtype=ember.float64, requires_grad=True) for a in args]
        d = cls(*ps)
        assert d.has_rsample
        d.rsample((40000,)).mean().backward()
        for p, want in zip(ps, dmean(*args)):
            assert abs(p.grad.item() - want) < 0.05 + 0.05 * abs(want), (cls, p.grad, want)


def _cb_mean_grad(p, h=1e-6):
    m = [TD.ContinuousBernoulli(probs=torch.tensor(q, dtype=torch.float64)).mean.item()
         for q in (p - h, p + h)]
    return (m[1] - m[0]) / (2 * h)


def test_relaxed_samples_live_on_their_support():
    ember.manual_seed(5)
    rb = D.RelaxedBernoulli(ember.tensor(0.5), probs=ember.tensor(PROB))
    x = rb.rsample((2000,))
    assert bool(((x > 0) & (x < 1)).all())
    # low temperature: mass concentrates near 0/1 with P(x > 0.5) = probs
    cold = D.RelaxedBernoulli(ember.tensor(0.05), probs=ember.tensor(PROB)).sample((20000,))
    np.testing.assert_allclose((cold.numpy() > 0.5).mean(0), PROB, atol=0.02)
    ro = D.RelaxedOneHotCategorical(ember.tensor(0.05), probs=ember.tensor(SIMPLEX))
    y = ro.sample((20000,))
    np.testing.assert_allclose(y.sum(-1).numpy(), 1.0, atol=1e-6)
    freq = np.stack([(y.numpy().argmax(-1) == k).mean(0) for k in range(4)], -1)
    np.testing.assert_allclose(freq, SIMPLEX, atol=0.02)


def test_gamma_rsample_gradient_matches_torch_formula():
    alpha = RNG.uniform(0.1, 20, 200)
    x = np.array([RNG.gamma(a) for a in alpha])
    from ember.distributions.samplers import standard_gamma_grad
    e = standard_gamma_grad(ember.tensor(alpha), ember.tensor(x)).numpy()
    t = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(e, t, rtol=2e-3, atol=1e-6)


def test_multivariate_normal_matches_torch():
    loc = RNG.standard_normal((2, 3))
    x = RNG.standard_normal((4, 2, 3))
    for kw in ("covariance_matrix", "precision_matrix", "scale_tril"):
        m = SPD if kw != "scale_tril" else np.linalg.cholesky(SPD)
        le, me = ember.tensor(loc, requires_grad=True), ember.tensor(m, requires_grad=True)
        lt, mt = torch.tensor(loc, requires_grad=True), torch.tensor(m, requires_grad=True)
        de = D.MultivariateNormal(le, **{kw: me})
        dt = TD.MultivariateNormal(lt, **{kw: mt})
        _close(de.log_prob(ember.tensor(x)), dt.log_prob(torch.tensor(x)), rtol=1e-6)
        _close(de.entropy(), dt.entropy())
        _close(de.covariance_matrix, dt.covariance_matrix, rtol=1e-6)
        _close(de.precision_matrix, dt.precision_matrix, rtol=1e-6)
        _close(de.variance, dt.variance, rtol=1e-6)
        (de.log_prob(ember.tensor(x)).sum() + de.entropy().sum()).backward()
        (dt.log_prob(torch.tensor(x)).sum() + dt.entropy().sum()).backward()
        _close(le.grad, lt.grad, rtol=1e-6)
        _close(me.grad, mt.grad, rtol=1e-5, atol=1e-8)
    ember.manual_seed(4)
    d = D.MultivariateNormal(ember.tensor(loc[0]), ember.tensor(SPD))
    s = d.sample((40000,)).numpy()
    np.testing.assert_allclose(np.cov(s.T), SPD, atol=0.15)


def test_independent_mixture_transformed():
    loc, scale = ember.tensor(REAL), ember.tensor(POS)
    de = D.Independent(D.Normal(loc, scale), 1)
    dt = TD.Independent(TD.Normal(torch.tensor(REAL), torch.tensor(POS)), 1)
    assert tuple(de.batch_shape) == (2,) and tuple(de.event_shape) == (3,)
    _close(de.log_prob(ember.tensor(POS2)), dt.log_prob(torch.tensor(POS2)))
    _close(de.entropy(), dt.entropy())
    mix_e = D.MixtureSameFamily(D.Categorical(probs=ember.tensor(SIMPLEX[:2, :3] + 0.1)),
                                D.Normal(loc, scale))
    mix_t = TD.MixtureSameFamily(TD.Categorical(probs=torch.tensor(SIMPLEX[:2, :3] + 0.1)),
                                 TD.Normal(torch.tensor(REAL), torch.tensor(POS)))
    v = RNG.standard_normal((5, 2))
    _close(mix_e.log_prob(ember.tensor(v)), mix_t.log_prob(torch.tensor(v)))
    _close(mix_e.mean, mix_t.mean)
    _close(mix_e.variance, mix_t.variance)
    _close(mix_e.cdf(ember.tensor(v)), mix_t.cdf(torch.tensor(v)))
    assert tuple(mix_e.sample((7,)).shape) == (7, 2)
    tr = [D.AffineTransform(ember.tensor(1.0), ember.tensor(2.0)), D.SigmoidTransform()]
    tt = [TD.AffineTransform(torch.tensor(1.0), torch.tensor(2.0)), TD.SigmoidTransform()]
    te = D.TransformedDistribution(D.Normal(loc, scale), tr)
    tto = TD.TransformedDistribution(TD.Normal(torch.tensor(REAL), torch.tensor(POS)), tt)
    _close(te.log_prob(ember.tensor(PROB)), tto.log_prob(torch.tensor(PROB)), rtol=1e-6)
    _close(te.cdf(ember.tensor(PROB)), tto.cdf(torch.tensor(PROB)), rtol=1e-6)
    ln = D.LogisticNormal(ember.tensor(REAL), ember.tensor(POS))
    lt = TD.LogisticNormal(torch.tensor(REAL), torch.tensor(POS))
    _close(ln.log_prob(ember.tensor(SIMPLEX[:2])), lt.log_prob(torch.tensor(SIMPLEX[:2])),
           rtol=1e-6)


TRANSFORMS = {
    "Exp": (D.ExpTransform(), TD.ExpTransform(), REAL),
    "Sigmoid": (D.SigmoidTransform(), TD.SigmoidTransform(), REAL),
    "Tanh": (D.TanhTransform(), TD.TanhTransform(), REAL),
    "Softplus": (D.SoftplusTransform(), TD.SoftplusTransform(), REAL),
    "Power": (D.PowerTransform(2.5), TD.PowerTransform(torch.tensor(2.5)), POS),
    "Affine": (D.AffineTransform(1.0, -3.0), TD.AffineTransform(1.0, -3.0), REAL),
    "StickBreaking": (D.StickBreakingTransform(), TD.StickBreakingTransform(), REAL),
    "LowerCholesky": (D.LowerCholeskyTransform(), TD.LowerCholeskyTransform(), SPD),
    "Compose": (D.ComposeTransform([D.ExpTransform(), D.AffineTransform(0.0, 2.0)]),
                TD.ComposeTransform([TD.ExpTransform(), TD.AffineTransform(0.0, 2.0)]), REAL),
    "Inverse": (D.ExpTransform().inv, TD.ExpTransform().inv, POS),
    "PositiveDefinite": (D.PositiveDefiniteTransform(), TD.PositiveDefiniteTransform(), SPD),
    "Cat": (D.CatTransform([D.ExpTransform(), D.AffineTransform(1.0, 2.0)], 1, [1, 2]),
            TD.CatTransform([TD.ExpTransform(), TD.AffineTransform(1.0, 2.0)], 1, [1, 2]),
            REAL),
    "CorrCholesky": (D.CorrCholeskyTransform(), TD.CorrCholeskyTransform(),
                     RNG.standard_normal((2, 6))),
    "Stack": (D.StackTransform([D.ExpTransform(), D.SigmoidTransform()], 0),
              TD.StackTransform([TD.ExpTransform(), TD.SigmoidTransform()], 0), REAL),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_match_torch(name):
    te, tt, x = TRANSFORMS[name]
    ye, yt = te(ember.tensor(x)), tt(torch.tensor(x))
    _close(ye, yt, rtol=1e-6)
    _close(te.inv(ye), tt.inv(yt), rtol=1e-6, atol=1e-8)
    if name not in ("LowerCholesky", "PositiveDefinite"):
        _close(te.log_abs_det_jacobian(ember.tensor(x), ye),
               tt.log_abs_det_jacobian(torch.tensor(x), yt), rtol=1e-6, atol=1e-8)
    assert te.bijective == tt.bijective
    # gradients through the forward map and its log-det-Jacobian
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ye, yt = te(xe), tt(xt)
    w = RNG.standard_normal(tuple(yt.shape))
    le, lt = (ye * ember.tensor(w)).sum(), (yt * torch.tensor(w)).sum()
    if name not in ("LowerCholesky", "PositiveDefinite"):
        le = le + te.log_abs_det_jacobian(xe, ye).sum()
        lt = lt + tt.log_abs_det_jacobian(xt, yt).sum()
    le.backward()
    lt.backward()
    _close(xe.grad, xt.grad, rtol=1e-6, atol=1e-9)


KL_PAIRS = [("Normal", "Normal"), ("Bernoulli", "Bernoulli"), ("Categorical", "Categorical"),
            ("OneHotCategorical", "OneHotCategorical"), ("Exponential", "Exponential"),
            ("Laplace", "Laplace"), ("Cauchy", "Cauchy"), ("Gumbel", "Gumbel"),
            ("Poisson", "Poisson"), ("HalfNormal", "HalfNormal"), ("LogNormal", "LogNormal"),
            ("Gamma", "Gamma"), ("Beta", "Beta"), ("Dirichlet", "Dirichlet"),
            ("Geometric", "Geometric"), ("Pareto", "Pareto"), ("Binomial", "Binomial"),
            ("Uniform", "Normal"), ("Exponential", "Gamma"), ("Exponential", "Normal"),
            ("Normal", "Exponential"), ("Uniform", "Uniform"),
            ("ContinuousBernoulli", "ContinuousBernoulli")]


def _second(name):
    params, _ = CASES[name]
    shifted = []
    for i, p in enumerate(params):
        if name in ("Binomial",) and i == 0:
            shifted.append(p)
        elif name in PROB_PARAM or (name == "Binomial" and i == 1):
            shifted.append(p[::-1].copy() if name in ("Categorical", "OneHotCategorical")
                           else 1 - p)
        elif name == "Uniform":
            shifted.append(p - 0.5 if i == 0 else p + 0.5)
        else:
            shifted.append(p * 1.3 + 0.1)
    return tuple(shifted)


@pytest.mark.parametrize("pq", KL_PAIRS, ids=lambda pq: "-".join(pq))
def test_kl_divergence_matches_torch(pq):
    p_name, q_name = pq
    pe, pe_params = _make(D, p_name, CASES[p_name][0], grad=True)
    pt, pt_params = _make(TD, p_name, CASES[p_name][0], grad=True)
    q_params = _second(q_name) if q_name == p_name else CASES[q_name][0]
    qe, _ = _make(D, q_name, q_params)
    qt, _ = _make(TD, q_name, q_params)
    ke, kt = D.kl_divergence(pe, qe), TD.kl_divergence(pt, qt)
    _close(ke, kt, rtol=1e-6, atol=1e-8)
    finite_e = ember.where(ke.isfinite(), ke, 0.0).sum()
    finite_t = torch.where(kt.isfinite(), kt, 0.0).sum()
    if finite_t.requires_grad:
        finite_e.backward()
        finite_t.backward()
        for a, b in zip(pe_params, pt_params):
            if b.grad is not None:
                _close(a.grad, b.grad, rtol=1e-5, atol=1e-8)


def test_kl_mvn_and_independent_and_registry():
    a = ember.tensor(np.linalg.cholesky(SPD))
    p = D.MultivariateNormal(ember.tensor(REAL), scale_tril=a)
    q = D.MultivariateNormal(ember.tensor(REAL[::-1].copy()), ember.tensor(SPD * 1.5))
    pt = TD.MultivariateNormal(torch.tensor(REAL), scale_tril=torch.tensor(a.numpy()))
    qt = TD.MultivariateNormal(torch.tensor(REAL[::-1].copy()), torch.tensor(SPD * 1.5))
    _close(D.kl_divergence(p, q), TD.kl_divergence(pt, qt), rtol=1e-6)
    ie = D.kl_divergence(D.Independent(D.Normal(ember.tensor(REAL), ember.tensor(POS)), 1),
                         D.Independent(D.Normal(ember.tensor(POS2), ember.tensor(POS)), 1))
    it = TD.kl_divergence(TD.Independent(TD.Normal(torch.tensor(REAL), torch.tensor(POS)), 1),
                          TD.Independent(TD.Normal(torch.tensor(POS2), torch.tensor(POS)), 1))
    _close(ie, it)
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Poisson(1.0))

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ember.tensor(42.0)

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), MyNormal(0.0, 2.0)).item() != 42.0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


@pytest.fixture
def torch_validates(torch):
    """torch's own default (validate arguments): importing torch._dynamo, as the compile
    tests do, switches it off for the whole process."""
    old = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(old)


@pytest.mark.parametrize("make", [
    lambda L: L.Normal(L_t(L, [0.0]), L_t(L, [-1.0])),
    lambda L: L.Exponential(L_t(L, [0.0])),
    lambda L: L.Bernoulli(probs=L_t(L, [1.5])),
    lambda L: L.Categorical(probs=L_t(L, [0.5, -0.1])),
    lambda L: L.Gamma(L_t(L, [1.0]), L_t(L, [-2.0])),
    lambda L: L.Beta(L_t(L, [0.0]), L_t(L, [1.0])),
    lambda L: L.Dirichlet(L_t(L, [1.0, -1.0])),
    lambda L: L.Uniform(L_t(L, [2.0]), L_t(L, [1.0])),
    lambda L: L.Poisson(L_t(L, [-1.0])),
    lambda L: L.Bernoulli(probs=L_t(L, [0.5]), logits=L_t(L, [0.5])),
    lambda L: L.Bernoulli(),
    lambda L: L.Normal(L_t(L, [0.0, 1.0]), 1.0).log_prob(L_t(L, [0.0, 1.0, 2.0])),
    lambda L: L.Bernoulli(probs=L_t(L, [0.5])).log_prob(L_t(L, [0.5])),
    lambda L: L.Exponential(L_t(L, [1.0])).log_prob(L_t(L, [-1.0])),
    lambda L: L.MultivariateNormal(L_t(L, [0.0, 0.0]), L_t(L, [[1.0, 2.0], [2.0, 1.0]])),
    lambda L: L.MultivariateNormal(L_t(L, [0.0, 0.0])),
    lambda L: L.Independent(L.Normal(L_t(L, [0.0]), 1.0), 2),
])
def test_validate_args_errors_match_torch(make, torch_validates):
    with pytest.raises(Exception) as te:
        make(TD)
    with pytest.raises(Exception) as ee:
        make(D)
    assert type(ee.value) is type(te.value) or isinstance(ee.value, type(te.value)), \
        (type(ee.value), type(te.value), ee.value)
    first = str(te.value).replace("torch.", "ember.").split("(")[0].split("\n")[0]
    assert str(ee.value).startswith(first), (str(ee.value), str(te.value))


def L_t(L, v):
    return (ember if L is D else torch).tensor(v)


def test_validation_can_be_switched_off_and_shapes_expand():
    d = D.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)
    assert math.isnan(d.log_prob(ember.tensor([0.0])).item())
    e = D.Normal(ember.tensor([0.0, 1.0]), 1.0).expand((3, 2))
    assert tuple(e.batch_shape) == (3, 2) and tuple(e.sample((4,)).shape) == (4, 3, 2)
    g = D.Gamma(ember.tensor([2.0]), 1.0).expand((5, 1))
    assert tuple(g.rsample().shape) == (5, 1)
    c = D.Categorical(logits=ember.zeros(2, 4)).expand((3, 2))
    assert tuple(c.sample().shape) == (3, 2)
    b = D.Bernoulli(probs=ember.tensor([0.3, 0.6]))
    _close(b.enumerate_support(), TD.Bernoulli(probs=torch.tensor([0.3, 0.6]))
           .enumerate_support())
    assert "Normal(loc" in repr(D.Normal(0.0, 1.0))


def test_low_rank_multivariate_normal_matches_torch():
    loc = RNG.standard_normal((2, 4))
    W = RNG.standard_normal((4, 2))
    diag = RNG.uniform(0.5, 2.0, 4)
    x = RNG.standard_normal((3, 2, 4))
    pe = [ember.tensor(a, requires_grad=True) for a in (loc, W, diag)]
    pt = [torch.tensor(a, requires_grad=True) for a in (loc, W, diag)]
    de, dt = D.LowRankMultivariateNormal(*pe), TD.LowRankMultivariateNormal(*pt)
    assert tuple(de.batch_shape) == (2,) and tuple(de.event_shape) == (4,)
    for attr in ("covariance_matrix", "precision_matrix", "scale_tril", "variance"):
        _close(getattr(de, attr), getattr(dt, attr), rtol=1e-6, atol=1e-9)
    _close(de.log_prob(ember.tensor(x)), dt.log_prob(torch.tensor(x)), rtol=1e-6)
    _close(de.entropy(), dt.entropy())
    (de.log_prob(ember.tensor(x)).sum() + de.entropy().sum()).backward()
    (dt.log_prob(torch.tensor(x)).sum() + dt.entropy().sum()).backward()
    for a, b in zip(pe, pt):
        _close(a.grad, b.grad, rtol=1e-5, atol=1e-8)
    ember.manual_seed(6)
    s = de.sample((40000,)).numpy()[:, 0]
    np.testing.assert_allclose(np.cov(s.T), W @ W.T + np.diag(diag), atol=0.2)


def test_von_mises_matches_torch_and_samples():
    loc, kappa = REAL, np.array([[0.01, 0.5, 2.0], [3.7, 3.8, 30.0]])
    pe = [ember.tensor(a, requires_grad=True) for a in (loc, kappa)]
    pt = [torch.tensor(a, requires_grad=True) for a in (loc, kappa)]
    de, dt = D.VonMises(*pe), TD.VonMises(*pt)
    v = RNG.uniform(-math.pi, math.pi, (2, 3))
    _close(de.log_prob(ember.tensor(v)), dt.log_prob(torch.tensor(v)), rtol=1e-6)
    _close(de.variance, dt.variance, rtol=1e-6)
    de.log_prob(ember.tensor(v)).sum().backward()
    dt.log_prob(torch.tensor(v)).sum().backward()
    for a, b in zip(pe, pt):
        _close(a.grad, b.grad, rtol=1e-5, atol=1e-8)
    ember.manual_seed(7)
    x = de.sample((20000,)).numpy()
    assert np.all((x >= -math.pi) & (x < math.pi))
    # circular mean resultant length E[cos(x - loc)] = I1/I0 = 1 - variance
    r = np.cos(x - loc).mean(0)
    np.testing.assert_allclose(r, 1 - de.variance.detach().numpy(), atol=0.02)


def test_lkj_cholesky_matches_torch_and_samples():
    conc = np.array([0.5, 1.0, 3.0])
    de = D.LKJCholesky(4, ember.tensor(conc))
    dt = TD.LKJCholesky(4, torch.tensor(conc))
    v = dt.sample((5,))
    _close(de.log_prob(ember.tensor(v.numpy())), dt.log_prob(v), rtol=1e-6)
    ember.manual_seed(8)
    s = de.sample((20000,))
    assert tuple(s.shape) == (20000, 3, 4, 4) and bool(de.support.check(s).all())
    # r = C[1, 0] has (r + 1) / 2 ~ Beta(b, b), b = eta - 1 + d / 2; every entry's spread
    # matches torch's onion sampler
    C = (s @ s.mT).numpy()
    b = conc - 1 + 4 / 2
    np.testing.assert_allclose(C[..., 1, 0].var(0), 1 / (2 * b + 1), rtol=0.1)
    Ct = (lambda x: (x @ x.mT).numpy())(dt.sample((20000,)))
    np.testing.assert_allclose(C.var(0), Ct.var(0), rtol=0.1, atol=1e-12)
    with pytest.raises(ValueError, match="dim"):
        D.LKJCholesky(1)


def test_wishart_matches_torch_and_samples():
    df = np.array([5.0, 7.5])
    L = np.linalg.cholesky(SPD)
    pe = [ember.tensor(df, requires_grad=True), ember.tensor(L, requires_grad=True)]
    pt = [torch.tensor(df, requires_grad=True), torch.tensor(L, requires_grad=True)]
    de = D.Wishart(pe[0], scale_tril=pe[1])
    dt = TD.Wishart(pt[0], scale_tril=pt[1])
    for attr in ("mean", "mode", "variance", "covariance_matrix", "precision_matrix"):
        _close(getattr(de, attr), getattr(dt, attr), rtol=1e-6, atol=1e-9)
    v = dt.sample((3,))
    _close(de.log_prob(ember.tensor(v.numpy())), dt.log_prob(v), rtol=1e-6)
    _close(de.entropy(), dt.entropy(), rtol=1e-6)
    (de.log_prob(ember.tensor(v.numpy())).sum() + de.entropy().sum()).backward()
    (dt.log_prob(v).sum() + dt.entropy().sum()).backward()
    for a, b in zip(pe, pt):
        _close(a.grad, b.grad, rtol=1e-5, atol=1e-8)
    for kw in ("covariance_matrix", "precision_matrix"):
        e = D.Wishart(ember.tensor(df), **{kw: ember.tensor(SPD)})
        t = TD.Wishart(torch.tensor(df), **{kw: torch.tensor(SPD)})
        _close(e.log_prob(ember.tensor(v.numpy())), t.log_prob(v), rtol=1e-6)
    ember.manual_seed(9)
    s = de.sample((20000,)).numpy()
    np.testing.assert_allclose(s.mean(0), de.mean.detach().numpy(), rtol=0.05, atol=0.3)
    with pytest.raises(ValueError, match="df"):
        D.Wishart(ember.tensor(1.0), covariance_matrix=ember.tensor(SPD))


@pytest.mark.parametrize("name", ["real", "positive", "nonnegative", "unit_interval",
                                  "simplex", "real_vector", "lower_cholesky", "gt", "lt",
                                  "interval", "positive_definite"])
def test_biject_to_and_transform_to_match_torch(name):
    def pick(C):
        return {"gt": lambda: C.greater_than(1.5), "lt": lambda: C.less_than(-2.0),
                "interval": lambda: C.interval(-1.0, 3.0)}.get(name, lambda: getattr(C, name))()
    x = SPD if name in ("lower_cholesky", "positive_definite") else REAL
    for E, T in ((D.biject_to, TD.biject_to), (D.transform_to, TD.transform_to)):
        try:
            tt = T(pick(TD.constraints))
        except NotImplementedError:
            continue
        if name == "lower_cholesky" and E is D.biject_to:
            continue
        if name == "positive_definite":
            _close(E(pick(D.constraints))(ember.tensor(x)), tt(torch.tensor(x)), rtol=1e-6)
            continue
        te = E(pick(D.constraints))
        ye, yt = te(ember.tensor(x)), tt(torch.tensor(x))
        _close(ye, yt, rtol=1e-6, atol=1e-9)
        assert bool(pick(D.constraints).check(ye).all())
        try:
            jt = tt.log_abs_det_jacobian(torch.tensor(x), yt)
        except NotImplementedError:       # not injective: torch has none either
            continue
        _close(te.log_abs_det_jacobian(ember.tensor(x), ye), jt, rtol=1e-6, atol=1e-8)
    with pytest.raises(NotImplementedError):
        D.biject_to(D.constraints.boolean)


def test_straight_through_and_module_aliases():
    from ember.distributions.categorical import Categorical
    from ember.distributions.normal import Normal
    from ember.distributions.one_hot_categorical import OneHotCategoricalStraightThrough

    assert Normal is D.Normal and Categorical is D.Categorical
    p = ember.tensor(SIMPLEX, requires_grad=True)
    d = OneHotCategoricalStraightThrough(probs=p)
    s = d.rsample((5,))
    assert bool(D.constraints.one_hot.check(s.detach()).all())
    w = ember.tensor(RNG.standard_normal(tuple(s.shape)))
    (s * w).sum().backward()
    pt = torch.tensor(SIMPLEX, requires_grad=True)
    probs_t = TD.OneHotCategoricalStraightThrough(probs=pt).probs
    (probs_t * torch.tensor(w.numpy()).sum(0)).sum().backward()
    _close(p.grad, pt.grad, rtol=1e-6)


def test_exponential_family_bregman_entropy_and_kl():
    from ember.distributions.kl import _KL_REGISTRY
    bregman = _KL_REGISTRY[D.ExponentialFamily, D.ExponentialFamily]
    for name in ("Normal", "Gamma", "Beta", "Dirichlet", "Poisson", "Bernoulli", "Exponential",
                 "ContinuousBernoulli"):
        p, _ = _make(D, name, CASES[name][0])
        q, _ = _make(D, name, _second(name))
        t, _ = _make(TD, name, CASES[name][0])
        assert isinstance(p, D.ExponentialFamily) == isinstance(t, TD.ExponentialFamily)
        _close(bregman(p, q), D.kl_divergence(p, q), rtol=1e-6, atol=1e-9)
        try:
            ht = TD.ExponentialFamily.entropy(t)
        except NotImplementedError:          # no constant carrier measure
            with pytest.raises(NotImplementedError):
                D.ExponentialFamily.entropy(p)
            continue
        _close(D.ExponentialFamily.entropy(p), ht, rtol=1e-6, atol=1e-9)
        _close(D.ExponentialFamily.entropy(p), p.entropy(), rtol=1e-6, atol=1e-9)
    with pytest.raises(NotImplementedError, match="different exponential"):
        bregman(D.Normal(0.0, 1.0), D.Exponential(1.0))
