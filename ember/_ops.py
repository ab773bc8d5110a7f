"""The op declarations: one line per op, from which every public variant is bound.

Each line names an op, its variants and its aliases::

    f   function      ember.op(input, ...)
    m   method        Tensor.op(self, ...)
    i   in-place      Tensor.op_(self, ...)
    I   in-place fn   ember.op_(input, ...)

The implementation of ``op`` is looked up once, at import: the first native op
module (``ember._C.*``) or composite module that defines it, else the Tensor
class itself (view methods of the Cython core). ``op_`` is found the same way;
an op without an in-place kernel gets one composed from the out-of-place op
(checked for overlap, shape and castability through the core's written-to checks,
then copied in). Aliases share every
variant of their op. A method written in the Tensor class body wins over the
table, so an argument order that differs from the function (``Tensor.where``)
stays explicit.
"""
from __future__ import annotations

# op                      variants  aliases
_TABLE = """
abs                       fmiI      absolute
acos                      fmiI      arccos
acosh                     fmiI      arccosh
add                       fmi
addbmm                    fmi
addcdiv                   fmi
addcmul                   fmi
addmm                     fmi
addmv                     fmiI
addr                      fmi
adjoint                   fm
all                       fm
allclose                  fm
amax                      fm
amin                      fm
aminmax                   fm
angle                     fm
any                       fm
arange                    f
argmax                    fm
argmin                    fm
argsort                   fm
argwhere                  fm
as_strided                fmiI
as_strided_scatter        fm
asarray                   f
asin                      fmiI      arcsin
asinh                     fmiI      arcsinh
atan                      fmiI      arctan
atan2                     fmi       arctan2
atanh                     fmiI      arctanh
atleast_1d                f
atleast_2d                f
atleast_3d                f
baddbmm                   fmi
bartlett_window           f
bernoulli                 fmi
bincount                  fm
binomial                  f
bitwise_and               fmi
bitwise_left_shift        fmi
bitwise_not               fmi
bitwise_or                fmi
bitwise_right_shift       fmi
bitwise_xor               fmi
blackman_window           f
block_diag                f
bmm                       fm
broadcast_tensors         f
broadcast_to              fm
bucketize                 f
cartesian_prod            f
cat                       f         concat concatenate
cauchy                    i
cdist                     f
ceil                      fmiI
cholesky                  fm
cholesky_inverse          fm
cholesky_solve            fm
chunk                     fm        unsafe_chunk
clamp                     fmiI      clip
clamp_max                 fmiI
clamp_min                 fmiI
clone                     fm
column_stack              f
combinations              f
complex                   f
conj                      fm
conj_physical             fmiI
conv1d                    f
conv2d                    f
conv_transpose1d          f
conv_transpose2d          f
copysign                  fmi
corrcoef                  fm
cos                       fmiI
cosh                      fmiI
count_nonzero             fm
cov                       fm
cross                     fm
cummax                    fm
cummin                    fm
cumprod                   fmi
cumsum                    fmi
cumulative_trapezoid      f
deg2rad                   fmiI
det                       fm
detach                    fmI
diag                      fm
diag_embed                fm
diagflat                  fm
diagonal                  fm
diagonal_scatter          fm
diff                      fm
dist                      fm
digamma                   fmi
div                       fmi       divide
dot                       fm
dsplit                    fm
dstack                    f
einsum                    f
empty_permuted            f
empty_strided             f
eq                        fmi
equal                     fm
erf                       fmiI
erfc                      fmiI
erfinv                    fmi
exp                       fmiI
exp2                      fmiI
expm1                     fmiI
exponential               i
eye                       f
fill                      fI
flatten                   fm
flip                      fm
fliplr                    fm
flipud                    fm
float_power               fmi
floor                     fmiI
floor_divide              fmi
fmax                      fm
fmin                      fm
fmod                      fmi
frac                      fmiI
frexp                     fm
frombuffer                f
gather                    fm
gcd                       fmiI
ge                        fmi       greater_equal
gelu                      fm
geometric                 i
geqrf                     fm
get_device                f
gradient                  f
gt                        fmi       greater
hamming_window            f
hann_window               f
heaviside                 fmi
histc                     fm
histogram                 fm
histogramdd               f
hsplit                    fm
hstack                    f
hypot                     fmi
i0                        fmiI
igamma                    fmi
igammac                   fmi
imag                      f
index_add                 fmi
index_copy                fmi
index_fill                fmi
index_put                 fmiI
index_reduce              fmi
index_select              fm
inner                     fm
inverse                   fm
is_complex                f
is_conj                   fm
is_distributed            fm
is_inference              fm
is_neg                    fm
is_nonzero                fm
is_same_size              fm
is_signed                 f
isclose                   fm
isfinite                  fm
isin                      f
isinf                     fm
isnan                     fm
isneginf                  fm
isposinf                  fm
isreal                    fm
istft                     fm
kaiser_window             f
kron                      fm
kthvalue                  fm
lcm                       fmiI
ldexp                     fmiI
le                        fmi       less_equal
lerp                      fmi
lgamma                    fmi
linspace                  f
log                       fmiI
log10                     fmiI
log1p                     fmiI
log2                      fmiI
log_normal                i
log_softmax               fm
logaddexp                 fm
logaddexp2                fm
logcumsumexp              fm
logdet                    fm
logical_and               fmi
logical_not               fmi
logical_or                fmi
logical_xor               fmi
logit                     fmiI
logspace                  f
logsumexp                 fm
lt                        fmi       less
lu                        fm
lu_solve                  fm
lu_unpack                 f
masked_fill               fmi
masked_scatter            fmi
masked_select             fm
matmul                    fm
matrix_exp                fm
matrix_power              fm
max                       fm
max_pool2d                f
maximum                   fmi
mean                      fm
median                    fm
meshgrid                  f
min                       fm
minimum                   fmi
mish                      fmi
mm                        fm
mode                      fm
movedim                   fm        moveaxis
msort                     fm
mul                       fmi       multiply
multinomial               fm
mv                        fm
mvlgamma                  fmi
nan_to_num                fmiI
nanmean                   fm
nanmedian                 fm
nanquantile               fm
nansum                    fm
narrow                    fm
narrow_copy               fm
native_dropout            f
ne                        fmi       not_equal
neg                       fmiI      negative
nextafter                 fmi
nonzero                   fm
nonzero_static            fm
norm                      fm
normal                    fi
orgqr                     fm
ormqr                     fm
outer                     fm        ger
permute                   fm
pinverse                  fm
poisson                   f
polar                     f
polygamma                 f
positive                  fm
pow                       fmi
prod                      fm
put                       fmi
qr                        fm
quantile                  fm
rad2deg                   fmiI
rand                      f
rand_like                 f
randint                   f
randint_like              f
randn                     f
randn_like                f
random                    i
randperm                  f
range                     f
ravel                     fm
real                      f
reciprocal                fmiI
relu                      fmiI
remainder                 fmi
renorm                    fmi
repeat                    m
repeat_interleave         fm
reshape                   fm
resize_as                 mI
resolve_conj              fm
resolve_neg               fm
roll                      fm
rot90                     fm
round                     fmiI
rsqrt                     fmiI
rsub                      f
scalar_tensor             f
scatter                   fmi
scatter_add               fmi
scatter_reduce            fmi
searchsorted              f
select                    fm
select_scatter            fm
sgn                       fmi
sigmoid                   fmiI
sign                      fmi
signbit                   fm
silu                      fmi
sin                       fmiI
sinc                      fmiI
sinh                      fmiI
slice_inverse             fm
slice_scatter             fm
slogdet                   fm
softmax                   fm
softplus                  f
sort                      fm
split                     fm        unsafe_split
split_with_sizes          fm        unsafe_split_with_sizes
sqrt                      fmiI
square                    fmiI
squeeze                   fmi
stack                     f
std                       fm
std_mean                  f
stft                      fm
sub                       fmi       subtract
sum                       fm
svd                       fm
t                         fmi
take                      fm
take_along_dim            fm
tan                       fmiI
tanh                      fmiI
tensor_split              fm
tensordot                 f
tile                      fm
to_dlpack                 f
topk                      fm
trace                     fm
transpose                 fmi       swapaxes swapdims
trapezoid                 f         trapz
triangular_solve          fm
tril                      fmi
tril_indices              f
triu                      fmi
triu_indices              f
true_divide               fmi
trunc                     fmiI      fix
unbind                    fm
unflatten                 fm
uniform                   i
unique                    fm
unique_consecutive        fm
unravel_index             f
unsqueeze                 fmi
vander                    f
var                       fm
var_mean                  f
vdot                      fm
view_as_complex           f
view_as_real              f
vsplit                    fm
vstack                    f         row_stack
where                     fm
xlogy                     fmiI
zero                      I
"""


# nn.functional ops that torch also exposes at the top level with the same signature;
# ``ember.<name>`` loads ember.nn.functional on first use (import ember stays cheap)
FUNCTIONAL_AT_TOP = tuple("""
adaptive_avg_pool1d avg_pool1d bilinear celu channel_shuffle conv3d conv_tbc
conv_transpose3d cosine_similarity hardshrink max_pool1d
max_pool1d_with_indices max_pool3d pairwise_distance pdist pixel_shuffle pixel_unshuffle
prelu rms_norm rrelu selu threshold
""".split())

# nn ops that torch exposes at the top level in ATen's own signature (argument order,
# integer reductions, enum codes): ember._nn_ops, loaded on first use like the above
ATEN_NN_AT_TOP = tuple("""
adaptive_max_pool1d affine_grid_generator alpha_dropout alpha_dropout_ batch_norm
binary_cross_entropy_with_logits celu_ chain_matmul constant_pad_nd convolution
cosine_embedding_loss ctc_loss dropout dropout_ embedding embedding_bag embedding_renorm_
feature_alpha_dropout feature_alpha_dropout_ feature_dropout feature_dropout_
frobenius_norm grid_sampler grid_sampler_2d grid_sampler_3d group_norm gru gru_cell
hinge_embedding_loss instance_norm kl_div layer_norm lstm lstm_cell margin_ranking_loss
norm_except_dim nuclear_norm poisson_nll_loss rnn_relu rnn_relu_cell rnn_tanh rnn_tanh_cell
rrelu_ selu_ threshold_ triplet_margin_loss
""".split())


def _parse(table: str):
    ops = []
    for line in table.strip().splitlines():
        name, variants, *aliases = line.split()
        ops.append((name, variants, tuple(aliases)))
    return ops


OPS = _parse(_TABLE)

# where implementations are looked up, in order (the Tensor class comes last)
_IMPL_MODULES = ("ember._C.elementwise", "ember._C.matmul", "ember._C.conv",
                 "ember._C.index", "ember._C.reduce", "ember._C.random", "ember._C.creation",
                 "ember._C.cplx", "ember._C.special", "ember._linalg_legacy", "ember._spectral",
                 "ember._composite")

# ops whose kernel writes out= directly, each element read before it is written at the
# same index: their in-place form passes out=self when autograd records nothing
_OUT_IS_SELF = frozenset({"lerp"})


def _composed_inplace(fn, name: str):
    """``Tensor.name_`` from the out-of-place op: self may not overlap its operands, the
    result must keep self's shape and be castable to its dtype (torch's rules), then it
    is copied in (autograd sees copy_)."""
    from ember._C import core

    def op_(self, *args, **kwargs):
        core._check_written(self, args, name + "_")
        if name in _OUT_IS_SELF and not (core.is_grad_enabled() and any(
                getattr(t, "requires_grad", False) for t in (self, *args))):
            shapes = [t.shape for t in args if isinstance(t, core.TensorBase)]
            if core.broadcast_shapes(self.shape, *shapes) == self.shape:
                return fn(self, *args, out=self, **kwargs)
        # under autograd the op reads a copy: its backward may need self's old value
        src = self.clone() if self.requires_grad and core.is_grad_enabled() else self
        r = fn(src, *args, **kwargs)
        if tuple(r.shape) != tuple(self.shape):
            raise RuntimeError(f"{name}_(): output with shape {list(self.shape)} doesn't match "
                               f"the broadcast shape {list(r.shape)}")
        core._check_cast(r.dtype, self.dtype, name + "_")
        return self.copy_(r)

    op_.__name__ = op_.__qualname__ = name + "_"
    op_.__doc__ = f"In-place version of :func:`ember.{name}` (result copied into ``self``)."
    return op_


def _function_from_method(meth, name: str):
    """``ember.name(input, ...)`` for an op the Tensor class holds as a method."""
    from ember._C.core import TensorBase

    def fn(input, *args, **kwargs):
        if not isinstance(input, TensorBase):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return meth(input, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = meth.__doc__
    return fn


def bind(tensor_cls) -> dict:
    """Bind every declared method variant onto ``tensor_cls`` and return the public
    functions (with aliases) as ``{name: callable}`` for ``ember.*``."""
    import importlib

    impls = {}                           # the first module to define a name wins
    for m in reversed(_IMPL_MODULES):
        impls.update(vars(importlib.import_module(m)))
    own = set(vars(tensor_cls))          # written in the class body: kept as they are

    def lookup(n):
        f = impls.get(n)
        return f if f is not None and not isinstance(f, type(importlib)) \
            else getattr(tensor_cls, n, None)

    functions = {}
    for name, variants, aliases in OPS:
        base = lookup(name) if variants.strip("iI") else None
        if base is None and variants.strip("iI"):
            raise ImportError(f"ember._ops: op {name!r} is declared but has no implementation")
        fn = base if name in impls or "f" not in variants else \
            _function_from_method(base, name)
        inplace = inplace_fn = None
        if "i" in variants or "I" in variants:
            inplace = lookup(name + "_")
            if inplace is None:
                inplace = _composed_inplace(base, name)
            inplace_fn = inplace if name + "_" in impls else \
                _function_from_method(inplace, name + "_")
        for n in (name,) + aliases:
            if "m" in variants and n not in own:
                setattr(tensor_cls, n, base)
            if "i" in variants and n + "_" not in own:
                setattr(tensor_cls, n + "_", inplace)
            if "f" in variants:
                functions[n] = fn
            if "I" in variants:
                functions[n + "_"] = inplace_fn
    return functions
