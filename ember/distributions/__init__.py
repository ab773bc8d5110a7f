"""``ember.distributions``: PyTorch's ``torch.distributions`` over ember's ops.

Parameters may require grad: ``log_prob``, ``entropy``, ``mean``, ``variance``
and ``rsample`` (where a distribution has ``has_rsample``) are differentiable.
Gamma, Poisson and Binomial draws come from vectorised rejection samplers on
ember's Philox generator (``ember.distributions.samplers``).
"""
from ember.distributions import constraints, transforms
from ember.distributions.constraint_registry import biject_to, transform_to
from ember.distributions.continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from ember.distributions.discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Geometric,
    Multinomial,
    NegativeBinomial,
    OneHotCategorical,
    Poisson,
)
from ember.distributions.distribution import Distribution
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
    LogisticNormal,
    LogNormal,
    Pareto,
    TransformedDistribution,
    Weibull,
)
from ember.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from ember.distributions.von_mises import VonMises
from ember.distributions.wishart import Wishart

_register_all()

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical",
           "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
           "CumulativeDistributionTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical",
           "ExpTransform", "Exponential", "FisherSnedecor", "Gamma", "Geometric", "Gumbel",
           "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform", "Kumaraswamy",
           "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli",
           "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily",
           "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "Pareto", "Poisson", "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical",
           "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
           "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
           "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to",
           "transforms"]
