"""Short-time Fourier transforms (``stft``, ``istft``) on top of ``ember.fft``:
framing through ``unfold``, overlap-add through ``fold``, with torch's defaults,
padding, normalisation and checks."""
from __future__ import annotations

import warnings
from typing import Optional

from ember._C import core as _core

__all__ = ["stft", "istft"]


def _ember():
    import ember
    return ember


def _window(window, win_length: int, n_fft: int, like, op: str):
    """The window centred in n_fft samples (ones when None)."""
    E = _ember()
    if window is None:
        w = E.ones(win_length, dtype=like.dtype.to_real() if like.dtype.is_complex else
                   like.dtype)
    else:
        if window.dim() != 1 or window.shape[0] != win_length:
            raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to "
                               f"win_length={win_length}, but got window with size "
                               f"{list(window.shape)}")
        w = window
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        w = E.nn.functional.pad(w, [left, n_fft - win_length - left])
    return w


def _check_sizes(n_fft, hop_length, win_length, op):
    if n_fft <= 0:
        raise RuntimeError(f"{op}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")


def stft(input, n_fft: int, hop_length: Optional[int] = None, win_length: Optional[int] = None,
         window=None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: Optional[bool] = None, return_complex: Optional[bool] = None):
    """Short-time Fourier transform of a 1-D signal or a batch of them (B, L).

    Returns a complex tensor of shape ``(B?, n_freq, n_frames)``, where ``n_freq`` is
    ``n_fft // 2 + 1`` when ``onesided`` (the default for real input and window) and
    ``n_fft`` otherwise.
    """
    E = _ember()
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    cplx = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not cplx:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.", UserWarning, stacklevel=2)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    _check_sizes(n_fft, hop, win, "stft")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is "
                      "known to cause spectral leakage. Other windows such as torch.hann_window "
                      "or torch.hamming_window are recommended to reduce spectral leakage.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    x = input if input.dim() == 2 else input.unsqueeze(0)
    if not (x.dtype.is_complex or x.is_floating_point()):
        x = x.to(_core._get_default_dtype())
    if center:
        p = n_fft // 2
        if x.dtype.is_complex:
            re = E.nn.functional.pad(x.real.unsqueeze(0), [p, p], mode=pad_mode).squeeze(0)
            im = E.nn.functional.pad(x.imag.unsqueeze(0), [p, p], mode=pad_mode).squeeze(0)
            x = E.complex(re.contiguous(), im.contiguous())
        else:
            x = E.nn.functional.pad(x.unsqueeze(0), [p, p], mode=pad_mode).squeeze(0)
    if x.shape[-1] < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    frames = x.unfold(-1, n_fft, hop)                     # (B, n_frames, n_fft)
    w = _window(window, win, n_fft, x, "stft")
    frames = E.mul(frames, w)
    if onesided is None:
        onesided = not cplx
    if onesided and cplx:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = E.fft.rfft(frames, dim=-1, norm=norm) if onesided else \
        E.fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)                          # (B, n_freq, n_frames)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else E.view_as_real(spec.contiguous())


def istft(input, n_fft: int, hop_length: Optional[int] = None,
          win_length: Optional[int] = None, window=None, center: bool = True,
          normalized: bool = False, onesided: Optional[bool] = None,
          length: Optional[int] = None, return_complex: bool = False):
    """Inverse of :func:`stft` by windowed overlap-add (least-squares when frames
    overlap), normalised by the summed squared window."""
    E = _ember()
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor.")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex "
                           f"dtype, but got {input.dim()}D")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    _check_sizes(n_fft, hop, win, "istft")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    x = input if input.dim() == 3 else input.unsqueeze(0)  # (B, n_freq, n_frames)
    n_freq, n_frames = x.shape[-2], x.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided:
        if n_fft // 2 + 1 != n_freq:
            raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of "
                               "the input tensor to match n_fft / 2 + 1 when onesided=True, "
                               f"but got {n_freq}")
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
    elif n_freq != n_fft:
        raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {n_freq}")
    norm = "ortho" if normalized else "backward"
    spec = x.transpose(-1, -2)                             # (B, n_frames, n_freq)
    if onesided:
        frames = E.fft.irfft(spec, n=n_fft, dim=-1, norm=norm)
    else:
        frames = E.fft.ifft(spec, n=n_fft, dim=-1, norm=norm)
        if not return_complex:
            frames = frames.real
    w = _window(window, win, n_fft, frames, "istft")
    frames = E.mul(frames, w)
    out_len = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames, hop, out_len)
    env = _overlap_add(E.square(w).expand(1, n_frames, n_fft).contiguous(), hop, out_len)
    start = n_fft // 2 if center else 0
    end = out_len - n_fft // 2 if (center and length is None) else (
        out_len if length is None else start + length)
    end = min(end, out_len)
    y = y[..., start:end]
    env = env[..., start:end]
    if bool(E.any(E.abs(env) < 1e-11)):
        raise RuntimeError("istft: window overlap add min: 0, the window (and hop) do not "
                           "satisfy the nonzero overlap-add (NOLA) constraint")
    y = E.div(y, env)
    if length is not None and y.shape[-1] < length:
        pad = [0, length - y.shape[-1]]
        y = E.complex(E.nn.functional.pad(y.real, pad), E.nn.functional.pad(y.imag, pad)) \
            if y.dtype.is_complex else E.nn.functional.pad(y, pad)
    return y if input.dim() == 3 else y.squeeze(0)


def _overlap_add(frames, hop: int, out_len: int):
    """Sum frames (B, T, n_fft) placed hop apart into (B, out_len)."""
    E = _ember()
    if frames.dtype.is_complex:
        return E.complex(_overlap_add(frames.real.contiguous(), hop, out_len),
                         _overlap_add(frames.imag.contiguous(), hop, out_len))
    b, t, n = frames.shape
    cols = frames.transpose(1, 2)                          # (B, n_fft, T)
    y = E.nn.functional.fold(cols, output_size=(1, out_len), kernel_size=(1, n),
                             stride=(1, hop))
    return y.reshape(b, out_len)
