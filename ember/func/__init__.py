"""ember.func: composable function transforms (PyTorch's ``torch.func``): ``grad``,
``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``linearize``,
``vmap``, ``functional_call`` and ``stack_module_state``."""
from ember.func._autodiff import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from ember.func._functional_call import functional_call, stack_module_state
from ember.func._vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize",
           "vmap", "functional_call", "stack_module_state"]
