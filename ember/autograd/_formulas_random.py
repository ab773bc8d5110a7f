"""Backward formulas for sampling ops (reparameterised draws)."""
from ember.autograd._table import formula


@formula("_standard_gamma", save_output=True)
def _standard_gamma(ctx, grad):
    from ember.distributions.samplers import standard_gamma_grad
    return (grad * standard_gamma_grad(ctx.input(0), ctx.output),)
