"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, variable-length
sequences (``rnn``), parametrizations, pruning and ``stateless.functional_call``."""
from ember.nn.utils import parametrizations, parametrize, prune, rnn, stateless
from ember.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "rnn", "parametrize", "parametrizations", "prune",
           "stateless"]
