"""Backward formulas for sampling ops (reparameterised draws)."""
from ember.autograd._table import formula


@formula("_standard_gamma", save_output=True)
def _standard_gamma(ctx, grad):
    from ember._C import random
    return (grad * random._standard_gamma_grad(ctx.input(0), ctx.output),)
