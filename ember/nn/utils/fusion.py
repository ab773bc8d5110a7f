"""Folding an eval-mode batch norm into the preceding convolution or linear layer."""
from __future__ import annotations

import copy

import ember
from ember.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """Weight and bias of the convolution that equals ``conv`` followed by the eval-mode
    batch norm with running stats ``bn_rm``/``bn_rv`` and affine ``bn_w``/``bn_b``."""
    dtype = conv_w.dtype
    if conv_b is None:
        conv_b = ember.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ember.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ember.zeros_like(bn_rm)
    inv_std = ember.rsqrt(bn_rv + bn_eps)
    shape = [1] * conv_w.dim()
    shape[1 if transpose else 0] = -1
    fused_w = (conv_w * (bn_w * inv_std).reshape(shape)).to(dtype)
    fused_b = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(conv_b.dtype)
    return (Parameter(fused_w, conv_w.requires_grad),
            Parameter(fused_b, conv_b.requires_grad))


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of the eval-mode ``conv`` with the eval-mode ``bn`` folded in."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("batch norm without running stats cannot be fused")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                    bn.running_var, bn.eps, bn.weight,
                                                    bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """Weight and bias of the linear layer that equals ``linear`` followed by the eval-mode
    batch norm."""
    if linear_b is None:
        linear_b = ember.zeros_like(bn_rm)
    scale = bn_w * ember.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * scale + bn_b
    return (Parameter(fused_w, linear_w.requires_grad),
            Parameter(fused_b, linear_b.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A copy of the eval-mode ``linear`` with the eval-mode ``bn`` folded in."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or "
                             "bn.num_features must equal 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("batch norm without running stats cannot be fused")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias,
                                                      bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
