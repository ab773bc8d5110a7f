"""nn ops in the signatures PyTorch gives them at the top level (``torch.batch_norm``,
``torch.embedding``, ``torch.lstm``, ...): ATen's argument order, integer reductions and
enum codes, mapped onto ``ember.nn.functional``. Loaded on first use of one of its names
(``import ember`` stays cheap)."""
from __future__ import annotations

import ember
from ember._composite import _finish
from ember.nn import functional as F
from ember.nn.modules import rnn as _rnn

__all__ = [
    "adaptive_max_pool1d", "affine_grid_generator", "alpha_dropout", "alpha_dropout_",
    "batch_norm", "binary_cross_entropy_with_logits", "celu_", "chain_matmul",
    "constant_pad_nd", "convolution", "cosine_embedding_loss", "ctc_loss", "dropout",
    "dropout_", "embedding", "embedding_bag", "embedding_renorm_", "feature_alpha_dropout",
    "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "frobenius_norm",
    "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "group_norm", "gru", "gru_cell",
    "hinge_embedding_loss", "instance_norm", "kl_div", "layer_norm", "lstm", "lstm_cell",
    "margin_ranking_loss", "norm_except_dim", "nuclear_norm", "poisson_nll_loss", "rnn_relu",
    "rnn_relu_cell", "rnn_tanh", "rnn_tanh_cell", "rrelu_", "selu_", "threshold_",
    "triplet_margin_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(op: str, reduction) -> str:
    """ATen's reduction enum (0 none, 1 mean, 2 sum) as nn.functional's string."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{op}(): argument 'reduction' must be int, not "
                        f"{type(reduction).__name__}")
    if not 0 <= reduction <= 2:
        raise ValueError(f"{op}(): {reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


# ---- normalisation ------------------------------------------------------------
def batch_norm(input, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool = True):
    """``torch.batch_norm``: :func:`ember.nn.functional.batch_norm` in ATen's argument
    order (``cudnn_enabled`` is accepted and has no effect on CPU)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                        eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool,
                  momentum: float, eps: float, cudnn_enabled: bool = True):
    """``torch.instance_norm``: :func:`ember.nn.functional.instance_norm` in ATen's
    argument order."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True):
    """``torch.layer_norm``: :func:`ember.nn.functional.layer_norm` plus ATen's
    ``cudnn_enable`` flag."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True):
    """``torch.group_norm``: :func:`ember.nn.functional.group_norm` plus ATen's
    ``cudnn_enabled`` flag."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def norm_except_dim(v, pow: float = 2, dim: int = 0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims
    (``dim=-1``: the norm of all of ``v``), as weight normalisation uses it."""
    if dim == -1:
        return ember.linalg.vector_norm(v, pow)
    dim = dim % v.dim()
    others = tuple(d for d in range(v.dim()) if d != dim)
    return ember.linalg.vector_norm(v, pow, others, keepdim=True)


def frobenius_norm(input, dim, keepdim: bool = False):
    """The 2-norm of ``input`` over ``dim`` (an int or up to two ints)."""
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) > 2:
        raise RuntimeError(f"frobenius_norm: expected at most 2 dims, got {len(dim)}")
    return ember.linalg.vector_norm(input, 2, dim, keepdim=keepdim)


def nuclear_norm(input, dim=None, keepdim: bool = False):
    """The sum of the singular values of the matrices over ``dim`` (the last two dims of a
    2-D ``input`` when omitted); ``nuclear_norm(input, keepdim)`` is accepted too."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    if dim is None:
        if input.dim() != 2:
            raise RuntimeError(f"nuclear_norm: Expected a 2D tensor, but got a "
                               f"{input.dim()}D tensor")
        dim = (0, 1)
    return ember.linalg.matrix_norm(input, "nuc", tuple(dim), keepdim=keepdim)


def chain_matmul(*matrices, out=None):
    """The product of the 2-D ``matrices``, in the cheapest order
    (:func:`ember.linalg.multi_dot`)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    r = matrices[0].clone() if len(matrices) == 1 else ember.linalg.multi_dot(matrices)
    return _finish(r, out, "chain_matmul", matrices, exact=True)


# ---- embedding ------------------------------------------------------------------
def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False):
    """``torch.embedding(weight, indices, ...)``: rows of ``weight``; a non-negative
    ``padding_idx`` names the row that gets no gradient (ATen's -1: none)."""
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(weight, indices, offsets, scale_grad_by_freq: bool = False, mode: int = 0,
                  sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx=None):
    """``torch.embedding_bag``: :func:`ember.nn.functional.embedding_bag` in ATen's form
    (``mode`` 0 sum, 1 mean, 2 max; 1-D ``indices`` cut into bags by ``offsets``).

    Returns
    -------
    tuple of Tensor
        ``(output, offset2bag, bag_size, max_indices)``: the reduced bags; the bag of
        each index; for ``mean``/``max``, the non-padding indices in each bag; for
        ``max``, the row of ``weight`` each maximum came from (``mean`` repeats
        ``bag_size`` there, as ATen does; ``sum`` gives zeros for both). The integer
        results have ``indices``' dtype; ``offset2bag`` is empty where ATen's fast sum
        path leaves it so (float32 ``sum`` without ``padding_idx``).
    """
    for name, v in (("indices", indices), ("offsets", offsets)):
        if not isinstance(v, ember.Tensor):
            raise TypeError(f"embedding_bag(): argument '{name}' must be Tensor, not "
                            f"{type(v).__name__}")
    if isinstance(mode, bool) or not isinstance(mode, int):
        raise TypeError(f"embedding_bag(): argument 'mode' (position 5) must be int, not "
                        f"{type(mode).__name__}")
    if not 0 <= mode <= 2:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if indices.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {indices.dtype} "
                           f"instead (while checking arguments for embedding_bag)")
    if indices.dim() != 1 or offsets.dim() != 1:
        raise RuntimeError(f"embedding_bag(): expected 1-D indices and offsets, got "
                           f"{indices.dim()}-D and {offsets.dim()}-D")
    n, noff = indices.numel(), offsets.numel()
    if noff and int(offsets[0]) != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got "
                           f"{int(offsets[0])}")
    if noff and int(offsets[-1]) > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {int(offsets[-1])}")
    output = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                             mode=_BAG_MODES[mode], sparse=sparse,
                             per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=padding_idx)
    itype = indices.dtype
    starts = offsets[:-1] if include_last_offset else offsets
    nbags = starts.numel()
    if mode == 0:
        # ATen's forward-only path (weight not requiring grad) sizes these by offsets
        zeros = ember.zeros(nbags if weight.requires_grad else noff, dtype=itype)
        # ATen's fast sum path (reduced-precision floats, unit row stride, no padding)
        # leaves offset2bag empty
        fast = weight.dtype in (ember.float32, ember.float16, ember.bfloat16) and \
            padding_idx is None and weight.stride(1) == 1
        o2b = ember.zeros(0, dtype=itype) if fast else _offset2bag(starts, n, itype)
        return output, o2b, zeros, zeros.clone()
    idx = indices.to(ember.int64)
    bag = _offset2bag(starts, n, ember.int64)
    keep = ember.ones(n, dtype=ember.bool)
    if padding_idx is not None:
        keep = idx != (padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx)
    bag_size = ember.zeros(nbags, dtype=ember.int64).index_add(0, bag, keep.to(ember.int64))
    if mode == 1:
        return output, bag.to(itype), bag_size.to(itype), bag_size.to(itype)
    # the first index in each bag whose row holds the bag's maximum, per column
    dim = weight.shape[1]
    with ember.no_grad():
        rows = weight.index_select(0, idx)
        best = output.index_select(0, bag) if n else rows
        pos = ember.arange(n, dtype=ember.int64).unsqueeze(1).expand(n, dim)
        hit = (rows == best) & keep.unsqueeze(1)
        first = ember.full((nbags, dim), n, dtype=ember.int64).scatter_reduce(
            0, bag.unsqueeze(1).expand(n, dim), ember.where(hit, pos, n), "amin")
        found = first < n
        max_indices = ember.where(found, idx.index_select(0, first.clamp_max(max(n - 1, 0))
                                                          .reshape(-1)).reshape(nbags, dim)
                                  if n else first, 0)
    return output, bag.to(itype), bag_size.to(itype), max_indices.to(itype)


def _offset2bag(starts, n: int, dtype):
    """The bag of each of the ``n`` indices, bags starting at ``starts``."""
    if n == 0:
        return ember.zeros(0, dtype=dtype)
    pos = ember.arange(n, dtype=ember.int64)
    bag = ember.searchsorted(starts.to(ember.int64), pos, right=True) - 1
    return bag.clamp_min(0).to(dtype)


def embedding_renorm_(input, indices, max_norm: float, norm_type: float):
    """Rescale, in place and without recording a gradient, the rows of ``input`` named
    by ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm``."""
    F._embedding_renorm(input, indices, max_norm, norm_type)
    return input


# ---- dropout ------------------------------------------------------------------
def dropout(input, p: float, train: bool):
    """``torch.dropout(input, p, train)``."""
    return F.dropout(input, p, train)


def dropout_(input, p: float, train: bool):
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p: float, train: bool):
    """``torch.alpha_dropout(input, p, train)``."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p: float, train: bool):
    return F.alpha_dropout(input, p, train, inplace=True)


def _feature_check(input, op):
    if input.dim() < 2:
        raise RuntimeError(f"{op}: Feature dropout requires at least 2 dimensions in the "
                           f"input")


def feature_dropout(input, p: float, train: bool):
    """Dropout of whole features: one draw per (batch, channel) pair, dims 0 and 1."""
    _feature_check(input, "feature_dropout")
    return F._feature_dropout(input, p, train, False, 2)


def feature_dropout_(input, p: float, train: bool):
    _feature_check(input, "feature_dropout_")
    return F._feature_dropout(input, p, train, True, 2)


def feature_alpha_dropout(input, p: float, train: bool):
    """Alpha dropout of whole features (one draw per (batch, channel) pair)."""
    _feature_check(input, "feature_alpha_dropout")
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p: float, train: bool):
    _feature_check(input, "feature_alpha_dropout_")
    return F.feature_alpha_dropout(input, p, train, inplace=True)


# ---- in-place activations -------------------------------------------------------
def celu_(input, alpha: float = 1.0):
    return F.celu_(input, alpha)


def selu_(input):
    return F.selu_(input)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator=None):
    return F.rrelu_(input, lower, upper, training)


def threshold_(input, threshold: float, value: float):
    return F.threshold_(input, threshold, value)


# ---- convolution, padding, pooling, sampling --------------------------------------
def constant_pad_nd(input, pad, value: float = 0):
    """Pad the last ``len(pad) // 2`` dims with ``value`` (negative pads crop)."""
    return F.pad(input, tuple(pad), "constant", value)


def convolution(input, weight, bias, stride, padding, dilation, transposed: bool,
                output_padding, groups: int):
    """ATen's generic convolution: 1-D, 2-D or 3-D by ``weight``'s rank, transposed or
    not."""
    nsp = weight.dim() - 2
    if nsp not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, got "
                           f"{weight.dim()}-D")
    stride, padding, dilation = tuple(stride), tuple(padding), tuple(dilation)
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nsp - 1]
        return fn(input, weight, bias, stride, padding, tuple(output_padding), groups,
                  dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nsp - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def adaptive_max_pool1d(input, output_size):
    """``(values, indices)`` of adaptive max pooling over the last dim."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


_INTERP = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def grid_sampler(input, grid, interpolation_mode: int, padding_mode: int,
                 align_corners: bool):
    """:func:`ember.nn.functional.grid_sample` with ATen's enum codes (interpolation
    0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    if not 0 <= interpolation_mode <= 2:
        raise RuntimeError(f"grid_sampler(): unknown interpolation mode {interpolation_mode}")
    if not 0 <= padding_mode <= 2:
        raise RuntimeError(f"grid_sampler(): unknown padding mode {padding_mode}")
    return F.grid_sample(input, grid, _INTERP[interpolation_mode], _PADDING[padding_mode],
                         align_corners)


def _grid_sampler_nd(nd, input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != nd or grid.dim() != nd:
        raise RuntimeError(f"grid_sampler(): expected {nd}D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode: int, padding_mode: int,
                    align_corners: bool):
    return _grid_sampler_nd(4, input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode: int, padding_mode: int,
                    align_corners: bool):
    return _grid_sampler_nd(5, input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners: bool):
    """The sampling grid of the affine maps ``theta`` (:func:`ember.nn.functional.affine_grid`)."""
    return F.affine_grid(theta, list(size), align_corners)


# ---- losses with ATen's integer reduction ---------------------------------------
# torch's Python bindings default ``reduction`` to 0 (none) for these, whatever the
# schema says; an explicit 1 is the mean and 2 the sum
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction: int = 0):
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction("binary_cross_entropy_with_logits",
                                                    reduction), pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction: int = 0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 0):
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction: int = 0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def kl_div(input, target, reduction: int = 0, *, log_target: bool = False):
    """Pointwise KL divergence; ``reduction=1`` is the plain mean over every element (no
    batchmean warning, as in ATen)."""
    r = _reduction("kl_div", reduction)
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    return loss if r == "none" else (loss.mean() if r == "mean" else loss.sum())


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float,
                     reduction: int):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: int = 0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 0, zero_infinity: bool = False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction("ctc_loss", reduction), zero_infinity)


# ---- recurrent cells and layers in ATen's flat-weights form -------------------------
def _cell_check(op, input, hx, w_ih, w_hh):
    if input.dim() != 2 or hx.dim() != 2:
        raise RuntimeError(f"{op}: expected a 2-D input and hidden state, got "
                           f"{input.dim()}-D and {hx.dim()}-D")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"{op}: input has inconsistent input_size: got {input.shape[1]} "
                           f"expected {w_ih.shape[1]}")
    if hx.shape[1] != w_hh.shape[1]:
        raise RuntimeError(f"{op}: hidden state has inconsistent hidden_size: got "
                           f"{hx.shape[1]}, expected {w_hh.shape[1]}")


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step: ``tanh(input W_ih^T + b_ih + hx W_hh^T + b_hh)``."""
    _cell_check("rnn_tanh_cell", input, hx, w_ih, w_hh)
    return ember.tanh(F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step with relu: ``relu(input W_ih^T + b_ih + hx W_hh^T + b_hh)``."""
    _cell_check("rnn_relu_cell", input, hx, w_ih, w_hh)
    return ember.relu(F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh))


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step from ``hx = (h, c)``; returns ``(h', c')`` (gates i, f, g, o)."""
    h, c = hx
    _cell_check("lstm_cell", input, h, w_ih, w_hh)
    return _rnn._lstm_step(F.linear(input, w_ih, b_ih), F.linear(h, w_hh, b_hh), c)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (gates r, z, n)."""
    _cell_check("gru_cell", input, hx, w_ih, w_hh)
    return _rnn._gru_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


class _FlatRNN(_rnn.RNNBase):
    """An RNNBase over caller-given weights in ATen's flat order (per layer and direction:
    w_ih, w_hh[, b_ih, b_hh][, w_hr]), so the functions run the layers' own code."""

    def __init__(self, mode, params, has_biases, num_layers, dropout, train, bidirectional,
                 batch_first, proj_size):
        _rnn.Module.__init__(self)
        D = 2 if bidirectional else 1
        per = 2 + 2 * bool(has_biases) + (proj_size > 0)
        params = list(params)
        if len(params) != num_layers * D * per:
            raise RuntimeError(f"{mode.lower()}: expected {num_layers * D * per} weight "
                               f"tensors for {num_layers} layer(s), got {len(params)}")
        self.mode, self.num_layers, self.bias = mode, num_layers, bool(has_biases)
        self.batch_first, self.dropout, self.bidirectional = batch_first, float(dropout), \
            bidirectional
        self.proj_size, self.training = proj_size, train
        self.input_size = params[0].shape[1]
        self.hidden_size = params[1].shape[1] if proj_size == 0 else params[per - 1].shape[1]
        it = iter(params)
        for layer in range(num_layers):
            for d in range(D):
                sfx = f"l{layer}{'_reverse' if d else ''}"
                names = [f"weight_ih_{sfx}", f"weight_hh_{sfx}"]
                if has_biases:
                    names += [f"bias_ih_{sfx}", f"bias_hh_{sfx}"]
                if proj_size > 0:
                    names.append(f"weight_hr_{sfx}")
                for n in names:
                    self._parameters[n] = next(it)


def _run(mode, args, proj_of=None):
    # input overload: (input, hx, params, has_biases, num_layers, dropout, train,
    # bidirectional, batch_first); data overload: (data, batch_sizes, hx, params, ...)
    if len(args) != 9:
        raise TypeError(f"{mode.lower()}() takes 9 positional arguments but {len(args)} were "
                        f"given")
    packed = isinstance(args[3], (list, tuple))
    if packed:
        data, batch_sizes, hx, params, has_b, nl, p, train, bidir = args
        batch_first = False
    else:
        data, hx, params, has_b, nl, p, train, bidir, batch_first = args
    proj = proj_of(hx) if proj_of is not None else 0
    m = _FlatRNN(mode, params, has_b, nl, p, train, bidir, batch_first, proj)
    if packed:
        from ember.nn.utils.rnn import PackedSequence
        out, h = m._forward_packed(PackedSequence(data, batch_sizes), hx)
        return out.data, h
    return m._forward_impl(data, hx)


def rnn_tanh(*args):
    """``torch.rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` (or the packed ``(data, batch_sizes, hx, params, ...)``
    form): ``(output, h_n)`` of a multi-layer Elman RNN."""
    return _run("RNN_TANH", args)


def rnn_relu(*args):
    """``torch.rnn_relu``: as :func:`rnn_tanh` with relu."""
    return _run("RNN_RELU", args)


def gru(*args):
    """``torch.gru``: ``(output, h_n)`` of a multi-layer GRU over flat weights."""
    return _run("GRU", args)


def lstm(*args):
    """``torch.lstm(input, (h0, c0), params, ...)``: ``(output, h_n, c_n)``; a projection
    size is read from ``h0`` as in ATen."""
    hx = args[2] if isinstance(args[3], (list, tuple)) else args[1]
    hx = tuple(hx)

    def proj(hx):
        return hx[0].shape[-1] if hx[0].shape[-1] != hx[1].shape[-1] else 0
    args = args[:1] + (hx,) + args[2:] if not isinstance(args[3], (list, tuple)) else \
        args[:2] + (hx,) + args[3:]
    out, (h, c) = _run("LSTM", args, proj)
    return out, h, c
