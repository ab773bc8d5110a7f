"""``ember.distributions``: PyTorch's ``torch.distributions`` over ember's ops.

Parameters may require grad: ``log_prob``, ``entropy``, ``mean``, ``variance``
and ``rsample`` (where a distribution has ``has_rsample``) are differentiable.
Gamma, Poisson and Binomial draws come from vectorised rejection samplers on
ember's Philox generator (``ember.distributions.samplers``).
"""
from ember.distributions import constraints, transforms
from ember.distributions.constraint_registry import biject_to, transform_to
from ember.distributions.continuous import (
    Cauchy,
    Exponential,
    GeneralizedPareto,
    Laplace,
    Normal,
    Uniform,
)
from ember.distributions.discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Geometric,
    Multinomial,
    NegativeBinomial,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
    Poisson,
)
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.gamma import Beta, Chi2, Dirichlet, Gamma, StudentT
from ember.distributions.kl import _register_all, kl_divergence, register_kl
from ember.distributions.lkj import LKJCholesky
from ember.distributions.multivariate import (
    LowRankMultivariateNormal,
    MixtureSameFamily,
    MultivariateNormal,
)
from ember.distributions.relaxed import (
    ContinuousBernoulli,
    ExpRelaxedCategorical,
    FisherSnedecor,
    Kumaraswamy,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from ember.distributions.transformed import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    Independent,
    InverseGamma,
    LogisticNormal,
    LogNormal,
    Pareto,
    TransformedDistribution,
    Weibull,
)
from ember.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from ember.distributions.von_mises import VonMises
from ember.distributions.wishart import Wishart

_register_all()

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
           "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
           "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily",
           "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
           "HalfNormal", "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy",
           "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli",
           "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily",
           "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform",
           "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform",
           "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StackTransform",
           "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
           "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to",
           "transforms"]


# PyTorch's per-distribution module paths (``torch.distributions.normal.Normal`` ...) as
# aliases of the modules above, so that ``from ember.distributions.normal import Normal`` works.
_ALIASES = {
    "bernoulli": "Bernoulli", "beta": "Beta", "binomial": "Binomial",
    "categorical": "Categorical", "cauchy": "Cauchy", "chi2": "Chi2",
    "continuous_bernoulli": "ContinuousBernoulli", "dirichlet": "Dirichlet",
    "exponential": "Exponential", "fishersnedecor": "FisherSnedecor",
    "generalized_pareto": "GeneralizedPareto",
    "geometric": "Geometric", "gumbel": "Gumbel", "half_cauchy": "HalfCauchy",
    "half_normal": "HalfNormal", "independent": "Independent", "inverse_gamma": "InverseGamma",
    "kumaraswamy": "Kumaraswamy", "laplace": "Laplace", "lkj_cholesky": "LKJCholesky",
    "log_normal": "LogNormal", "logistic_normal": "LogisticNormal",
    "lowrank_multivariate_normal": "LowRankMultivariateNormal",
    "mixture_same_family": "MixtureSameFamily", "multinomial": "Multinomial",
    "multivariate_normal": "MultivariateNormal", "negative_binomial": "NegativeBinomial",
    "normal": "Normal", "one_hot_categorical": "OneHotCategorical OneHotCategoricalStraightThrough",
    "pareto": "Pareto", "poisson": "Poisson", "relaxed_bernoulli": "RelaxedBernoulli",
    "relaxed_categorical": "RelaxedOneHotCategorical", "studentT": "StudentT",
    "transformed_distribution": "TransformedDistribution", "uniform": "Uniform",
    "weibull": "Weibull",
}


def _install_aliases() -> None:
    import sys
    import types

    for mod_name, names in _ALIASES.items():
        full = f"{__name__}.{mod_name}"
        if full in sys.modules:
            continue
        mod = types.ModuleType(full, f"Alias of PyTorch's torch.distributions.{mod_name}.")
        for n in names.split():
            setattr(mod, n, globals()[n])
        mod.__all__ = names.split()
        sys.modules[full] = mod


_install_aliases()
