"""Fold and Unfold: sliding local blocks to and from image-like tensors."""
from __future__ import annotations

import ember
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["Fold", "Unfold"]

_Size2 = int | tuple[int, int]


class Fold(Module):
    """Combine an array of sliding local blocks into a tensor (col2im).

    ``(N, C * kh * kw, L)`` or ``(C * kh * kw, L)`` input becomes
    ``(N, C, *output_size)`` or ``(C, *output_size)``, overlapping blocks summed;
    see :func:`ember.nn.functional.fold`.

    Parameters
    ----------
    output_size : int or tuple of 2 ints
        Spatial size of the output.
    kernel_size : int or tuple of 2 ints
        Size of the blocks.
    dilation : int or tuple of 2 ints, optional
        Spacing between the elements of a block.
    padding : int or tuple of 2 ints, optional
        Implicit zero padding on both sides of each spatial dimension.
    stride : int or tuple of 2 ints, optional
        Step between the blocks.
    """

    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size: _Size2, kernel_size: _Size2, dilation: _Size2 = 1,
                 padding: _Size2 = 0, stride: _Size2 = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        """Fold ``input``'s blocks into the output tensor."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding local blocks from an image-like tensor (im2col).

    ``(N, C, H, W)`` or ``(C, H, W)`` input becomes ``(N, C * kh * kw, L)`` or
    ``(C * kh * kw, L)``, one column per block; see
    :func:`ember.nn.functional.unfold`.

    Parameters
    ----------
    kernel_size : int or tuple of 2 ints
        Size of the blocks.
    dilation : int or tuple of 2 ints, optional
        Spacing between the elements of a block.
    padding : int or tuple of 2 ints, optional
        Implicit zero padding on both sides of each spatial dimension.
    stride : int or tuple of 2 ints, optional
        Step between the blocks.
    """

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size: _Size2, dilation: _Size2 = 1, padding: _Size2 = 0,
                 stride: _Size2 = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        """Unfold ``input`` into its blocks."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
