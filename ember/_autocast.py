"""Autocast state and op lists (``ember.autocast``); the dispatch mode that casts op inputs
is ``ember.amp.autocast_mode.AutocastMode`` (this module stays light: ``import ember``
loads it).

Casts happen at each op's public entry, as the dispatcher's Python key sees it, so an op
runs entirely in its policy's dtype and the ops it decomposes into inherit that dtype.
Python composites on torch's lists (losses, ``prelu``, ``trace``, ``cdist``) mark their
entry with ``autocast_entry`` so that autocast sees them as one op rather than their parts.

The op lists are torch's, per device type (``LISTS``): ``LOWER`` ops run in the autocast
dtype, ``FP32`` ops in float32, ``PROMOTE`` ops in the widest floating dtype of their
inputs; any other op runs in the dtype of its inputs. An op follows the autocast state and
lists of its tensors' device type. float64 tensors are never cast."""
from __future__ import annotations

import functools

from ember._C import core

LOWER = frozenset("""conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm addbmm linear
matmul conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d prelu
scaled_dot_product_attention""".split())

FP32 = frozenset("""avg_pool3d binary_cross_entropy grid_sampler polar prod quantile nanquantile
stft cdist trace view_as_complex cholesky cholesky_inverse cholesky_solve inverse lu_solve
orgqr ormqr pinverse max_pool3d max_unpool2d max_unpool3d adaptive_avg_pool3d
reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d replication_pad3d
mse_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss
smooth_l1_loss cross_entropy l1_loss huber_loss margin_ranking_loss soft_margin_loss
triplet_margin_loss multi_margin_loss ctc_loss kl_div multilabel_margin_loss
binary_cross_entropy_with_logits fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn
fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft
linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals linalg_eigvals
linalg_eigvalsh linalg_inv linalg_householder_product linalg_tensorinv linalg_tensorsolve
fake_quantize_per_tensor_affine geqrf lu_unpack qr svd triangular_solve fractional_max_pool2d
fractional_max_pool3d adaptive_max_pool3d linalg_qr linalg_cholesky_ex linalg_svd linalg_eig
linalg_eigh linalg_lstsq linalg_inv_ex""".split())

PROMOTE = frozenset(("stack", "cat", "index_copy"))

# torch's CUDA lists: more ops in float16/bfloat16, and the pointwise transcendental ops,
# norms, reductions and softmaxes in float32 (the ``fp32_set_opt_dtype`` ones only when
# no ``dtype=`` is given)
CUDA_LOWER = LOWER | frozenset("""addmv addr einsum mv chain_matmul linalg_multi_dot
convolution lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell""".split())

CUDA_FP32 = frozenset("""acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt
sinh tan pow softplus layer_norm group_norm frobenius_norm nuclear_norm cosine_similarity
poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div l1_loss
smooth_l1_loss huber_loss mse_loss margin_ranking_loss multilabel_margin_loss soft_margin_loss
triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits cross_entropy dist pdist
cdist renorm logsumexp upsample_nearest1d upsample_nearest2d upsample_nearest3d
upsample_linear1d upsample_bilinear2d upsample_trilinear3d upsample_bicubic2d grid_sampler
polar norm prod softmax log_softmax cumprod cumsum vector_norm linalg_vector_norm
linalg_matrix_norm sum""".split())

CUDA_FP32_OPT_DTYPE = frozenset("""prod softmax log_softmax cumprod cumsum vector_norm
linalg_vector_norm linalg_matrix_norm sum""".split())

CUDA_PROMOTE = frozenset("""addcdiv addcmul atan2 bilinear cross dot grid_sampler index_put
scatter_add tensordot stack cat index_copy""".split())

# ops torch refuses under CUDA autocast (unsafe in float16), with its advice
CUDA_BANNED = frozenset(("binary_cross_entropy",))

# device type -> (lower-precision ops, float32 ops, widest-dtype ops)
LISTS = {"cpu": (LOWER, FP32, PROMOTE), "cuda": (CUDA_LOWER, CUDA_FP32, CUDA_PROMOTE)}

_SUPPORTED = {"cpu": ("bfloat16", "float16"), "cuda": ("float16", "bfloat16")}

# device type -> [enabled, dtype name]
_state = {"cpu": [False, "bfloat16"], "cuda": [False, "float16"]}
_cache_enabled = [True]
_nesting = [0]
_cache: dict = {}           # id(tensor) -> (weakref(tensor), version, casted)
_on = [False]               # any device autocast enabled (read by autocast_entry)


def _sync():
    _on[0] = any(s[0] for s in _state.values())


# vmap levels active, and the composites vmap has batching rules for (it sees those as one
# op; the others it batches through the ops they decompose into)
_vmap_depth = [0]
_vmap_names: set = set()


def autocast_entry(name: str):
    """Mark a Python composite on an autocast list: under autocast (and under vmap, when
    vmap has a rule for it) it reaches the dispatcher as one op ``name``, so its inputs are
    cast, or batched, before it decomposes."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if core._mode_active() and (_on[0] or (_vmap_depth[0] and name in _vmap_names)):
                return core._dispatch(name, fn, args, kwargs)
            return fn(*args, **kwargs)
        return wrapper
    return deco


def clear_cache() -> None:
    _cache.clear()
