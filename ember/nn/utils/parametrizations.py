"""Ready-made parametrizations (PyTorch's ``torch.nn.utils.parametrizations``):
``orthogonal``, ``weight_norm`` and ``spectral_norm`` over
:mod:`ember.nn.utils.parametrize`."""
from __future__ import annotations

import ember
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.utils import _orthogonal_maps as _maps
from ember.nn.utils import parametrize

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


def _make_orthogonal(a):
    """The Q of a = QR with a non-negative diagonal of R."""
    x, tau = _maps.geqrf(a)
    q = _maps.householder_product(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _is_orthogonal(q):
    n, k = q.shape[-2], q.shape[-1]
    eye = ember.eye(k, dtype=q.dtype)
    eps = 10.0 * n * ember.finfo(q.dtype).eps
    return bool(ember.allclose(q.transpose(-1, -2) @ q, eye, atol=eps))


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex():
            raise ValueError("ember's orthogonal parametrization supports real tensors only")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.transpose(-1, -2)
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = ember.cat([x, ember.zeros(*x.shape[:-2], n, n - k, dtype=x.dtype)], -1)
            a = x - x.transpose(-1, -2)                      # skew-symmetric
            if self.orthogonal_map == "matrix_exp":
                q = _maps.matrix_exp(a)
            else:                                           # (I + A/2)(I - A/2)^-1
                eye = ember.eye(n, dtype=a.dtype)
                q = _maps.solve(eye - a * 0.5, eye + a * 0.5)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = _maps.householder_product(a, tau)
            # the diagonal of x holds the sign of each column (+-1), not a parameter
            q = q * x.diagonal(dim1=-2, dim2=-1).detach().to(ember.int32).unsqueeze(-2)
        if "base" in self._buffers:
            q = self.base @ q
        return q.transpose(-1, -2) if transposed else q

    def right_inverse(self, q):
        with ember.no_grad():
            if tuple(q.shape) != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {tuple(q.shape)}.")
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = q.transpose(-1, -2)
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the "
                        "Cayley parametrizations when use_trivialization=False.")
                a, tau = _maps.geqrf(q)
                diag = a.diagonal(dim1=-2, dim2=-1)
                sign = diag.sign()
                sign = ember.where(tau == 0.0, -sign, sign)
                idx = ember.arange(diag.shape[-1])
                a[..., idx, idx] = sign
                return a.transpose(-1, -2) if transpose else a
            if n == k:
                q = _make_orthogonal(q) if not _is_orthogonal(q) else q.clone()
            else:
                extra = ember.randn(*q.shape[:-2], n, n - k, dtype=q.dtype)
                q = _make_orthogonal(ember.cat([q, extra], -1))
            self.base = q
            return _neg_eye_like(q_init)


def _neg_eye_like(t):
    """-I of ``t``'s (possibly rectangular, batched) shape: householder(0) is then I."""
    m = min(t.shape[-2], t.shape[-1])
    out = ember.zeros_like(t)
    idx = ember.arange(m)
    out[..., idx, idx] = -1.0
    return out


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal: it is
    ``orthogonal_map`` (``'matrix_exp'``, ``'cayley'`` or ``'householder'``) of an
    unconstrained tensor, times a fixed orthogonal ``base`` with ``use_trivialization``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.dim()} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


def _norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dim but ``dim`` (all dims for ``dim == -1``), shaped
    to broadcast against ``v``."""
    if dim == -1:
        return v.norm()
    dims = tuple(d for d in range(v.dim()) if d != dim)
    return v.norm(2, dims, keepdim=True) if dims else v.abs()


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but
    ``dim``): ``original0`` holds the magnitude ``g``, ``original1`` the direction ``v``."""
    if dim is not None and dim < -1:
        dim += getattr(module, name).dim()
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _load_old_keys(state_dict, prefix, local_metadata, strict, missing_keys,
                       unexpected_keys, error_msgs):
        # checkpoints of the hook-based ``nn.utils.weight_norm`` store ``<name>_g/_v``
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_load_old_keys)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = ember.empty(h, dtype=mat.dtype).normal_(0, 1)
            v = ember.empty(w, dtype=mat.dtype).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n):
        with ember.no_grad():
            for _ in range(n):
                self._u.copy_(F.normalize(ember.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ember.vdot(u, ember.mv(mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its largest singular value, estimated by power iteration
    (one step per training forward; buffers ``_u`` and ``_v`` keep the estimate)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ember.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d,
                                       ConvTranspose3d)) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
