"""SyncBatchNorm: batch normalisation whose training statistics are those of the whole
global batch, every rank of a process group contributing its part.

Without an initialised ``ember.distributed`` (or in a group of one, or in eval mode) it
is BatchNorm. In a group of several ranks each forward all-reduces per-channel sums and
sums of squares with the element count (one collective), and each backward all-reduces
the two per-channel sums the input gradient needs (one more), through the MPI backend."""
from __future__ import annotations

import sys

import ember
from ember.nn.modules.normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]

_fn = []


def _sync_function():
    """The autograd Function (built on first use: autograd loads lazily)."""
    if _fn:
        return _fn[0]
    import ember.distributed as dist
    from ember.autograd import Function

    class _SyncBatchNorm(Function):
        @staticmethod
        def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group):
            C = x.shape[1]
            dims = (0,) + tuple(range(2, x.dim()))
            shape = (1, C) + (1,) * (x.dim() - 2)
            n_local = x.numel() // C
            stats = ember.cat([x.sum(dims), (x * x).sum(dims),
                               ember.full((1,), float(n_local), dtype=x.dtype)])
            dist.all_reduce(stats, group=group)
            n = stats[2 * C].item()
            if n <= 1:
                raise ValueError(f"Expected more than 1 value per channel when training, got "
                                 f"input size {list(x.shape)}")
            mean = stats[:C] / n
            var = (stats[C:2 * C] / n - mean * mean).clamp_min(0)
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var, alpha=momentum * n / (n - 1))
            invstd = ember.rsqrt(var + eps)
            xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
            ctx.save_for_backward(xhat, invstd, weight)
            ctx.group, ctx.n, ctx.dims, ctx.shape = group, n, dims, shape
            ctx.has_bias = bias is not None
            y = xhat * weight.reshape(shape) if weight is not None else xhat
            return y + bias.reshape(shape) if bias is not None else y

        @staticmethod
        def backward(ctx, gy):
            xhat, invstd, weight = ctx.saved_tensors
            dims, shape = ctx.dims, ctx.shape
            g_bias = gy.sum(dims)
            g_weight = (gy * xhat).sum(dims)
            # the input gradient: dx = invstd * w * (gy - mean(gy) - xhat * mean(gy * xhat)),
            # the means taken over the global batch
            sums = ember.cat([g_bias, g_weight])
            dist.all_reduce(sums, group=ctx.group)
            C = g_bias.shape[0]
            m_gy, m_gyx = sums[:C] / ctx.n, sums[C:] / ctx.n
            scale = invstd * weight if weight is not None else invstd
            gx = (gy - m_gy.reshape(shape) - xhat * m_gyx.reshape(shape)) * scale.reshape(shape)
            return (gx, g_weight if weight is not None else None,
                    g_bias if ctx.has_bias else None, None, None, None, None, None)

    _fn.append(_SyncBatchNorm)
    return _SyncBatchNorm


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation over the global batch of a process group (PyTorch's
    ``torch.nn.SyncBatchNorm``).

    Parameters
    ----------
    num_features : int
        ``C`` of an input ``(N, C, ...)``.
    eps, momentum, affine, track_running_stats
        As for :class:`BatchNorm2d`.
    process_group : ProcessGroup, optional
        The ranks whose statistics are combined (the default group when omitted).
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _group_size(self) -> int:
        if "ember.distributed" not in sys.modules:    # never initialised: no import
            return 1
        import ember.distributed as dist
        if not dist.is_initialized():
            return 1
        return dist.get_world_size(self.process_group)

    def forward(self, input):
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm: expected input with {self.num_features} channels, "
                             f"got {input.shape[1]}")
        bn_training = self.training or (self.running_mean is None and
                                        self.running_var is None)
        if not (bn_training and self.training) or self._group_size() == 1:
            return super().forward(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                eaf = 1.0 / float(self.num_batches_tracked.item())
        track = self.track_running_stats
        return _sync_function().apply(input, self.weight, self.bias,
                                      self.running_mean if track else None,
                                      self.running_var if track else None, self.eps, eaf,
                                      self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm layer in it replaced by a SyncBatchNorm that
        takes over its parameters, running statistics and mode (``module`` itself when it
        is a BatchNorm layer: the new layer is returned)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                module.affine, module.track_running_stats, process_group)
            if module.affine:
                with ember.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out

