# cython: freethreading_compatible = False
"""Random numbers: ``Generator`` (counter-based Philox4x32-10), the default
generator and seeding, the sampling factories (``rand``, ``randn``,
``randint``, ``randperm``, ``normal``, ``bernoulli``, ``multinomial``), the
in-place samplers bound as Tensor methods (``uniform_``, ``normal_`` ...) and
the one-pass ``dropout`` kernel used by ``nn``.

A generator is (seed, offset).  Every op draws from its own counter space
{element index, offset} under the key ``seed`` and then advances the offset by
one, so each value depends only on (seed, offset, element index): the same
seed gives the same numbers on any thread count (src_c/philox.c)."""
import contextlib as _contextlib
import os as _os
import warnings as _warnings

from libc.stdint cimport int64_t, uint64_t, uint8_t
from libc.string cimport memcpy

from ember._C.core cimport *
from ember._C.frame cimport *
from ember._C import core as _core
from ember._C import elementwise as _ew

from ember._C.c_random cimport *

_C_NAMES = ("bool", "unsigned char", "signed char", "short", "int", "long", "c10::Half",
            "c10::BFloat16", "float", "double")
# the integer range of each integer dtype, and 2^digits of each float dtype
_INT_RANGE = {EM_BOOL: (0, 1), EM_U8: (0, 255), EM_I8: (-128, 127), EM_I16: (-32768, 32767),
              EM_I32: (-2 ** 31, 2 ** 31 - 1), EM_I64: (-2 ** 63, 2 ** 63 - 1)}
_FLOAT_DIGITS = {EM_F16: 11, EM_BF16: 8, EM_F32: 24, EM_F64: 53}

# PyTorch's default CPU seed, so a fresh process starts from a known state
cdef uint64_t DEFAULT_SEED = 67280421310721ULL
cdef int STATE_BYTES = 16


# ----------------------------------------------------------------------------
# Generator

cdef uint64_t _seed_value(object seed) except? 0:
    if isinstance(seed, TensorBase):
        seed = seed.item()
    if isinstance(seed, float) or not (isinstance(seed, int) or hasattr(seed, "__index__")):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    s = seed.__index__()
    if s < -2 ** 63 or s >= 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return <uint64_t>(s & 0xFFFFFFFFFFFFFFFF)


cdef class Generator:
    """A counter-based Philox4x32-10 random-number generator: a seed and an offset.

    ``Generator(device="cpu")``; ``manual_seed``, ``seed``, ``initial_seed``,
    ``get_state`` / ``set_state`` (a 16-byte ``uint8`` tensor: seed, offset)."""
    cdef uint64_t _seed
    cdef uint64_t _offset
    cdef object _device

    def __init__(self, device="cpu"):
        cdef Device dev = as_device(device if device is not None else "cpu")
        if dev.kind == DEV_CUDA:
            raise RuntimeError("Generator: CUDA is not available in this build of ember "
                               "(see ember.cuda.unavailable_reason())")
        self._device = dev
        self._seed = DEFAULT_SEED
        self._offset = 0

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        """Seed the generator (and rewind it); returns the generator."""
        self._seed = _seed_value(seed)
        self._offset = 0
        return self

    def seed(self):
        """Seed from OS entropy; returns the seed."""
        s = int.from_bytes(_os.urandom(8), "little") & 0x7FFFFFFFFFFFFFFF
        self._seed = s
        self._offset = 0
        return s

    def initial_seed(self):
        """The seed this generator was last seeded with."""
        return self._seed

    def get_offset(self):
        return self._offset

    def set_offset(self, offset):
        if offset < 0:
            raise RuntimeError(f"set_offset: offset must be non-negative, got {offset}")
        self._offset = <uint64_t>offset
        return self

    def get_state(self):
        """The state as a uint8 tensor of 16 bytes (seed, then offset; little endian)."""
        cdef int64_t n = STATE_BYTES
        cdef TensorBase t = new_tensor(1, &n, EM_U8, cpu_device())
        cdef uint64_t buf[2]
        buf[0] = self._seed
        buf[1] = self._offset
        memcpy(t._storage.data, buf, 16)
        return t

    def set_state(self, new_state):
        """Restore a state returned by get_state(); returns the generator."""
        if not isinstance(new_state, TensorBase) or (<TensorBase>new_state)._dtype != EM_U8:
            raise TypeError("RNG state must be an ember.ByteTensor (a uint8 tensor)")
        cdef TensorBase t = contig(<TensorBase>new_state)
        cdef int64_t n = numel_of(t._ndim, t._shape)
        if n != STATE_BYTES:
            raise RuntimeError(f"Expected a Philox generator state of size {STATE_BYTES} but "
                               f"found the input RNG state size to be {n}")
        if t._device.kind != DEV_CPU:
            t = <TensorBase>t.to("cpu")
        cdef uint64_t buf[2]
        memcpy(buf, t._storage.data + t._offset, 16)
        self._seed = buf[0]
        self._offset = buf[1]
        return self

    def clone_state(self):
        cdef Generator g = Generator(self._device)
        g._seed = self._seed
        g._offset = self._offset
        return g

    def __reduce__(self):
        return (_rebuild_generator, (str(self._device), self._seed, self._offset))

    def __repr__(self):
        return f"<ember.Generator device={self._device} seed={self._seed} offset={self._offset}>"

    cdef uint64_t _next(self) noexcept:
        cdef uint64_t o = self._offset
        self._offset += 1
        return o


def _rebuild_generator(device, seed, offset):
    cdef Generator g = Generator(device)
    g._seed = seed
    g._offset = offset
    return g


default_generator = Generator()
cdef Generator _default = default_generator


def manual_seed(seed):
    """Seed the default generator and, as torch does, every CUDA device's; returns
    the default generator (``ember.manual_seed(0)``)."""
    if isinstance(seed, float):
        seed = int(seed)
    g = _default.manual_seed(seed)
    import ember.cuda as _cuda       # (seeding works without CUDA: it is remembered)
    _cuda.manual_seed_all(seed)
    return g


def seed():
    """Seed the default generator from OS entropy; returns the seed."""
    return _default.seed()


def initial_seed():
    """The seed of the default generator."""
    return _default.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor (for checkpointing)."""
    return _default.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state from get_rng_state()."""
    _default.set_state(new_state)


@_contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Context manager: the default generator's state is restored on exit."""
    if not enabled:
        yield
        return
    state = _default.get_state()
    try:
        yield
    finally:
        _default.set_state(state)


def _philox_block(ctr, key):
    """One Philox4x32-10 block (for the known-answer test)."""
    cdef unsigned int c[4]
    cdef unsigned int k[2]
    cdef unsigned int o[4]
    for i in range(4):
        c[i] = ctr[i]
    k[0] = key[0]
    k[1] = key[1]
    em_philox4x32_10(c, k, o)
    return (o[0], o[1], o[2], o[3])


def _kernel_isa():
    return ("generic", "avx2", "avx512")[em_random_isa()]


# ----------------------------------------------------------------------------
# helpers

cdef Generator _gen(object generator, str op):
    if generator is None:
        return _default
    if isinstance(generator, Generator):
        return <Generator>generator
    raise TypeError(f"{op}(): argument 'generator' must be ember.Generator, not "
                    f"{type(generator).__name__}")


cdef int _nthreads(int64_t n) noexcept:
    # a random draw costs several plain copies: go parallel earlier
    return nthreads_for(n * 8)


def _kw(**kwargs):
    """kwargs without the defaults, for re-dispatch to modes and plugin kernels"""
    return {k: v for k, v in kwargs.items() if v is not None and v is not False}


cdef object _method_slow(str name, object fn, TensorBase t, tuple args, dict kwargs):
    """In-place samplers on a plugin tensor without its own kernel: sample on
    the CPU and copy in."""
    if slow_path() or t._device.kind != DEV_PLUGIN or \
            name in _core._backend_kernel_names(t._device.type):
        return redispatch(name, fn, (t,) + args, kwargs)
    cargs = tuple([a.to("cpu") if isinstance(a, TensorBase) else a for a in args])
    c = _core.empty(shape_tuple(t), dtype=t.dtype)
    fn(c, *cargs, **kwargs)
    return t.copy_(c)


cdef TensorBase _empty(tuple args, object size, int dt, str op):
    cdef int64_t shp[MAX_DIMS]
    cdef int nd
    if size is not None:
        if args:
            raise TypeError(f"{op}() received an invalid combination of arguments: size given "
                            f"both positionally and as a keyword")
        args = (size,) if not isinstance(size, int) else ((size,),)
    nd = parse_shape(args, shp, op)
    check_alloc(nd, shp, dt, op)
    return new_tensor(nd, shp, dt, cpu_device())


cdef TensorBase _empty_shape(TensorBase like, int dt):
    return new_tensor(like._ndim, like._shape, dt, cpu_device())


cdef int _float_dtype(object dtype, str kernel) except -1:
    cdef int dt = dtype_code(dtype)
    if dt < 0:
        return default_dtype()
    if dt < EM_F16:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_type_name(dt)}'")
    return dt


cdef int _require_float(TensorBase t, str kernel) except -1:
    if t._dtype < EM_F16 or category(t._dtype) == 3:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{torch_type_name(t._dtype)}'")
    return 0


cdef str _num(object v):
    """a number as C++'s stream prints it (what PyTorch's messages show)"""
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


cdef object _as_number(object v, str op, str arg):
    if isinstance(v, TensorBase):
        if (<TensorBase>v)._ndim != 0:
            raise TypeError(f"{op}(): argument '{arg}' must be Number, not Tensor")
        return v.item()
    if scalar_category(v) < 0:
        raise TypeError(f"{op}(): argument '{arg}' must be Number, not {type(v).__name__}")
    return v


cdef object _as_int(object v, str op, str arg):
    if isinstance(v, TensorBase):
        if (<TensorBase>v)._ndim != 0 or (<TensorBase>v)._dtype >= EM_F16:
            raise TypeError(f"{op}(): argument '{arg}' must be int, not Tensor")
        return v.item()
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if scalar_category(v) == 1:
        return v.__index__()
    raise TypeError(f"{op}() received an invalid combination of arguments - argument '{arg}' "
                    f"must be int, not {type(v).__name__}")


# the samplers: fill t (any layout) from generator g

cdef int _fill_float(TensorBase t, int kind, double a, double b, Generator g) except -1:
    cdef TensorBase d = t if is_contig(t) else _empty_shape(t, t._dtype)
    cdef int64_t n = numel_of(d._ndim, d._shape)
    cdef uint64_t seed = g._seed, off = g._next()
    cdef char *p = data_ptr(d)
    cdef int dt = d._dtype, nt
    if category(dt) == 3:
        # complex: the (re, im) pairs are 2n reals drawn alike (torch's complex randn
        # draws each part with variance 1/2, passed in as b)
        dt = real_of(dt)
        n *= 2
    nt = _nthreads(n)
    with nogil:
        em_rand_float(kind, dt, p, n, seed, off, a, b, nt)
    if d is not t:
        copy_into(t, d)
    return 0


cdef int _fill_int(TensorBase t, int64_t lo, uint64_t rng, Generator g) except -1:
    cdef TensorBase d = t if is_contig(t) else _empty_shape(t, t._dtype)
    cdef int64_t n = numel_of(d._ndim, d._shape)
    cdef uint64_t seed = g._seed, off = g._next()
    cdef char *p = data_ptr(d)
    cdef int dt = d._dtype, nt = _nthreads(n)
    with nogil:
        em_rand_int(dt, p, n, seed, off, lo, rng, nt)
    if d is not t:
        copy_into(t, d)
    return 0


cdef int _fill_bernoulli(TensorBase t, double p, Generator g) except -1:
    cdef TensorBase d = t if is_contig(t) else _empty_shape(t, t._dtype)
    cdef int64_t n = numel_of(d._ndim, d._shape)
    cdef uint64_t seed = g._seed, off = g._next()
    cdef char *ptr = data_ptr(d)
    cdef int dt = d._dtype, nt = _nthreads(n)
    with nogil:
        em_rand_bernoulli(dt, ptr, n, seed, off, p, nt)
    if d is not t:
        copy_into(t, d)
    return 0


cdef int _fill_bernoulli_tensor(TensorBase t, TensorBase p, Generator g) except -1:
    """t ~ Bernoulli(p), p broadcast to t's shape"""
    cdef TensorBase pf = _empty_shape(t, EM_F64)
    copy_into(pf, p)
    cdef int64_t n = numel_of(pf._ndim, pf._shape), bad
    cdef uint64_t seed = g._seed, off = g._next()
    cdef double *ptr = <double *>data_ptr(pf)
    cdef int nt = _nthreads(n)
    with nogil:
        bad = em_rand_bernoulli_p(ptr, n, seed, off, nt)
    if bad:
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    copy_into(t, pf)
    return 0


cdef int _check_range(int dt, object lo, object hi, str op) except -1:
    """PyTorch's checks of random_(from, to) / randint(low, high) against the dtype"""
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= "
                           f"to={hi}")
    if dt in _INT_RANGE:
        mn, mx = _INT_RANGE[dt]
        if lo < mn or lo > mx:
            raise RuntimeError(f"from is out of bounds for {_C_NAMES[dt]}")
        if hi - 1 < mn or hi - 1 > mx:
            raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES[dt]}")
    else:
        lim = 2 ** _FLOAT_DIGITS[dt]
        if lo < -lim or lo > lim:
            _warnings.warn(f"from is out of bounds [-(2^{_FLOAT_DIGITS[dt]}), "
                           f"2^{_FLOAT_DIGITS[dt]}]. Due to precision limitations "
                           f"{_C_NAMES[dt]} can support discrete uniform distribution only "
                           f"within this range.", UserWarning, stacklevel=3)
        if hi - 1 < -lim or hi - 1 > lim:
            _warnings.warn(f"to - 1 is out of bounds [-(2^{_FLOAT_DIGITS[dt]}), "
                           f"2^{_FLOAT_DIGITS[dt]}]. Due to precision limitations "
                           f"{_C_NAMES[dt]} can support discrete uniform distribution only "
                           f"within this range.", UserWarning, stacklevel=3)
    if lo < -2 ** 63 or hi > 2 ** 63 - 1 or lo > 2 ** 63 - 1:
        raise ValueError("Overflow when unpacking long long")
    return 0


# ----------------------------------------------------------------------------
# factories

cdef object _standard(str name, object fn, int dist, str kernel, tuple size, dict kwargs,
                      generator, out, dtype, device, requires_grad):
    """rand / randn: float samples of a standard distribution"""
    cdef Device dev = as_device(device)
    if slow_path() or dev.kind != DEV_CPU:
        return factory_slow(name, fn, size, dict(kwargs, **_kw(
            generator=generator, out=out, dtype=dtype, device=device,
            requires_grad=requires_grad)), dev)
    cdef Generator g = _gen(generator, name)
    cdef TensorBase t = _empty(size, kwargs.pop("size", None), _float_dtype(
        _out_dtype(dtype, out), kernel), name)
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    # torch's complex randn draws each part with variance 1/2
    _fill_float(t, dist, 0.0, 0.7071067811865476 if dist == EM_RD_NORMAL and
                category(t._dtype) == 3 else 1.0, g)
    return finish_out(t, out, requires_grad, name)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False, **kwargs):
    """Uniform samples from [0, 1): ``rand(2, 3)``, ``rand((2, 3), dtype=...)``."""
    return _standard("rand", rand, EM_RD_UNIFORM, "check_uniform_bounds", size, kwargs,
                     generator, out, dtype, device, requires_grad)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, **kwargs):
    """Standard normal samples: ``randn(2, 3)``."""
    return _standard("randn", randn, EM_RD_NORMAL, "normal_kernel_cpu", size, kwargs,
                     generator, out, dtype, device, requires_grad)


cdef tuple _like(TensorBase input, dtype, device):
    return (input.dtype if dtype is None else dtype, input._device if device is None else device)


cdef object _sample_like(object fn, str name, object input, dtype, device, requires_grad,
                         generator, memory_format):
    cdef TensorBase t = as_tensor(input, name, "input")
    d, dev = _like(t, dtype, device)
    return _in_format(t, fn(shape_tuple(t), dtype=d, device=dev, requires_grad=requires_grad,
                            generator=generator), memory_format, name)


cdef object _in_format(TensorBase t, r, memory_format, str name):
    # a channels-last input (or a named memory format) gives a result laid out so
    if memory_format is None and not ((t._ndim == 4 or t._ndim == 5) and not is_contig(t)):
        return r
    from ember import _memory_format
    return _memory_format.relayout_like(t, r, memory_format, name)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None, generator=None):
    return _sample_like(rand, "rand_like", input, dtype, device, requires_grad, generator,
                        memory_format)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None, generator=None):
    return _sample_like(randn, "randn_like", input, dtype, device, requires_grad, generator,
                        memory_format)


def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None,
            layout=None, device=None, requires_grad=False, pin_memory=False):
    """Uniform integers in [low, high): ``randint(10, (3,))``, ``randint(2, 5, (3,))``."""
    cdef Device dev = as_device(device)
    if slow_path() or dev.kind != DEV_CPU:
        return factory_slow("randint", randint, args, _kw(
            size=size, low=low, high=high, generator=generator, out=out, dtype=dtype,
            device=device, requires_grad=requires_grad), dev)
    rest = args
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        size = args[len(args) - 1]
        rest = args[:len(args) - 1]
    if len(rest) == 1:
        if high is not None:
            low, high = rest[0], high
        else:
            high = rest[0]
    elif len(rest) == 2:
        low, high = rest
    elif len(rest) > 2:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args)} given)")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    lo = 0 if low is None else _as_int(low, "randint", "low")
    hi = _as_int(high, "randint", "high")
    if isinstance(size, int) or not hasattr(size, "__len__"):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not "
                        f"{type(size).__name__}")
    cdef Generator g = _gen(generator, "randint")
    cdef int dt = dtype_code(_out_dtype(dtype, out))
    if dt < 0:
        dt = EM_I64
    _check_range(dt, lo, hi, "randint")
    cdef TensorBase t = _empty((tuple(size),), None, dt, "randint")
    _fill_int(t, <int64_t>lo, <uint64_t>((hi - lo) & 0xFFFFFFFFFFFFFFFF), g)
    return finish_out(t, out, requires_grad, "randint")


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None, generator=None):
    """randint with input's shape (and dtype / device unless given)."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"randint_like(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if high is None:
        low, high = 0, low
    d, dev = _like(<TensorBase>input, dtype, device)
    return _in_format(<TensorBase>input, randint(low, high, shape_tuple(<TensorBase>input),
                                                 dtype=d, device=dev,
                                                 requires_grad=requires_grad,
                                                 generator=generator),
                      memory_format, "randint_like")


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """A random permutation of 0..n-1 (int64 unless dtype says otherwise)."""
    cdef Device dev = as_device(device)
    if slow_path() or dev.kind != DEV_CPU:
        return factory_slow("randperm", randperm, (n,), _kw(
            generator=generator, out=out, dtype=dtype, device=device,
            requires_grad=requires_grad), dev)
    cdef int64_t nn = int64_arg(_as_int(n, "randperm", "n"), "randperm", "n")
    if nn < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {nn}: [{nn}]")
    cdef int dt = dtype_code(_out_dtype(dtype, out))
    if dt < 0:
        dt = EM_I64
    if dt == EM_BOOL:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if dt in _INT_RANGE and nn > 0 and nn - 1 > _INT_RANGE[dt][1]:
        raise RuntimeError(f"value cannot be converted to type "
                           f"{('bool', 'uint8_t', 'int8_t', 'int16_t', 'int32_t', 'int64_t')[dt]}"
                           f" without overflow")
    cdef Generator g = _gen(generator, "randperm")
    cdef TensorBase t = new_tensor(1, &nn, EM_I64, cpu_device())
    cdef uint64_t seed = g._seed, off = g._next()
    cdef int64_t *p = <int64_t *>data_ptr(t)
    with nogil:
        em_randperm(p, nn, seed, off)
    if dt != EM_I64:
        t = cast(t, dt)
    return finish_out(t, out, requires_grad, "randperm")


cdef int _check_std_tensor(TensorBase std) except -1:
    cdef TensorBase s = contig(cast(std, EM_F64))
    cdef int64_t i, n = numel_of(s._ndim, s._shape)
    cdef const double *p = <const double *>data_ptr(s)
    cdef bint bad = False
    with nogil:
        for i in range(n):
            if not (p[i] >= 0.0):
                bad = True
                break
    if bad:
        raise RuntimeError("normal expects all elements of std >= 0.0")
    return 0


cdef TensorBase _affine(TensorBase z, TensorBase mean, TensorBase std):
    """mean + std * z, broadcast to z's shape (z contiguous, float32 or float64)"""
    cdef NdIter it
    cdef int cd = z._dtype
    cdef TensorBase m = cast(mean, cd), s = cast(std, cd)
    iter_init(&it, [z, z, m, s], z._ndim, z._shape)
    cdef em_loop fn = em_normal_affine_loop(cd)
    with nogil:
        em_run_nd(fn, 4, it.ptrs, it.ndim, it.shape, it.strides, NULL, nthreads_for(it.numel))
    return z


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False, pin_memory=False):
    """Normal samples.  normal(mean: Tensor, std: Tensor | float) broadcasts;
    normal(mean: float, std: Tensor); normal(mean: float, std: float, size)."""
    cdef bint tm = isinstance(mean, TensorBase), ts = isinstance(std, TensorBase)
    cdef Device dev
    cdef TensorBase z, t, mt, st
    cdef int64_t shp[MAX_DIMS]
    cdef int nd, rd, cd
    if not tm and not ts:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got "
                            f"({type(mean).__name__}, {type(std).__name__}), but expected one "
                            "of: (Tensor mean, Tensor std), (Tensor mean, float std), "
                            "(float mean, Tensor std), (float mean, float std, tuple of ints "
                            "size)")
        dev = as_device(device)
        if slow_path() or dev.kind != DEV_CPU:
            return factory_slow("normal", normal, (mean, std, size), _kw(
                generator=generator, out=out, dtype=dtype, device=device,
                requires_grad=requires_grad), dev)
        m = float(_as_number(mean, "normal", "mean"))
        s = float(_as_number(std, "normal", "std"))
        if not s >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        t = _empty((size,) if not isinstance(size, int) else ((size,),), None,
                   _float_dtype(_out_dtype(dtype, out), "normal_kernel_cpu"), "normal")
        _fill_float(t, EM_RD_NORMAL, m, s, _gen(generator, "normal"))
        return finish_out(t, out, requires_grad, "normal")
    if size is not None:
        raise TypeError("normal(): 'size' is only accepted with float mean and std")
    first = <TensorBase>(mean if tm else std)
    if slow_path() or off_fast(first) or needs_slow_arg(mean) or needs_slow_arg(std):
        if tm and ts:
            check_same_device(<TensorBase>mean, <TensorBase>std, "normal", "std")
        return redispatch("normal", normal, (mean, std), _kw(generator=generator, out=out))
    if tm and ts:
        check_same_device(<TensorBase>mean, <TensorBase>std, "normal", "std")
        mt, st = <TensorBase>mean, <TensorBase>std
        nd = broadcast_shape(mt._ndim, mt._shape, st._ndim, st._shape, shp)
        rd = result_type2(mean, std)
    elif tm:
        mt = <TensorBase>mean
        s = float(_as_number(std, "normal", "std"))
        if not s >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        st = wrap_scalar(s, EM_F64)
        nd = mt._ndim
        for i in range(nd):
            shp[i] = mt._shape[i]
        rd = mt._dtype
    else:
        st = <TensorBase>std
        mt = wrap_scalar(float(_as_number(mean, "normal", "mean")), EM_F64)
        nd = st._ndim
        for i in range(nd):
            shp[i] = st._shape[i]
        rd = st._dtype
    if ts and category(st._dtype) == 3:
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if isinstance(out, TensorBase):
        if category(rd) == 3 and category((<TensorBase>out)._dtype) < 3:
            raise RuntimeError(f"result type {torch_type_name(rd)} can't be cast to the "
                               f"desired output type "
                               f"{torch_type_name((<TensorBase>out)._dtype)}")
        rd = (<TensorBase>out)._dtype
    if rd < EM_F16:
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                  f"'{torch_type_name(rd)}'")
    if ts:
        _check_std_tensor(st)
    cdef Generator g = _gen(generator, "normal")
    if category(rd) == 3:
        # a complex result: complex noise (variance std^2, half in each part), as torch
        z = new_tensor(nd, shp, rd, cpu_device())
        normal_(z, 0.0, 1.0, generator=g)
        if grad_on() and ((tm and mt._requires_grad) or (ts and st._requires_grad)):
            if out is not None:
                raise RuntimeError("normal(): out= is not supported for inputs that require "
                                   "grad")
            return _ew.add(mean, _ew.mul(std, z))
        t = cast(_ew.add(mt, _ew.mul(st, z)), rd)
        return finish_out(t, out, False, "normal", (mean, std))
    cd = EM_F64 if rd == EM_F64 else EM_F32
    z = new_tensor(nd, shp, cd, cpu_device())
    _fill_float(z, EM_RD_NORMAL, 0.0, 1.0, g)
    if grad_on() and ((tm and mt._requires_grad) or (ts and st._requires_grad)):
        # differentiable in mean and std: mean + std * z through the recorded ops
        r = _ew.add(mean, _ew.mul(std, cast(z, rd)))
        if out is not None:
            raise RuntimeError("normal(): out= is not supported for inputs that require grad")
        return r
    _affine(z, mt, st)
    t = cast(z, rd)
    return finish_out(t, out, False, "normal", (mean, std))


def bernoulli(input, p=None, *, generator=None, out=None):
    """Bernoulli samples: probabilities from ``input`` (or the float ``p``), same shape
    and dtype as ``input``."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    cdef TensorBase x = <TensorBase>input
    if slow_path() or off_fast(x):
        return _method_slow_new("bernoulli", bernoulli, x, (p,), _kw(generator=generator,
                                                                     out=out))
    cdef Generator g = _gen(generator, "bernoulli")
    cdef TensorBase t = _empty_shape(x, x._dtype)
    if p is None:
        _require_float(x, "bernoulli_tensor_cpu_p_")
        _fill_bernoulli_tensor(t, x, g)
    else:
        pf = float(_as_number(p, "bernoulli", "p"))
        if not (0.0 <= pf <= 1.0):
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
        _fill_bernoulli(t, pf, g)
    return finish_out(t, out, False, "bernoulli", input)


cdef object _method_slow_new(str name, object fn, TensorBase t, tuple args, dict kwargs):
    """Out-of-place samplers on a plugin tensor without its own kernel."""
    if slow_path() or t._device.kind != DEV_PLUGIN or \
            name in _core._backend_kernel_names(t._device.type):
        return redispatch(name, fn, (t,) + args, kwargs)
    cargs = tuple([a.to("cpu") if isinstance(a, TensorBase) else a for a in args])
    return fn(t.to("cpu"), *cargs, **kwargs).to(t._device)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Sample category indices from the rows of ``input`` (non-negative weights)."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    cdef TensorBase x = <TensorBase>input
    if slow_path() or off_fast(x):
        return _method_slow_new("multinomial", multinomial, x, (num_samples, replacement),
                                _kw(generator=generator, out=out))
    cdef int64_t k = int64_arg(_as_int(num_samples, "multinomial", "num_samples"), "multinomial",
                               "num_samples")
    if x._ndim < 1 or x._ndim > 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if x._dtype < EM_F16:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{torch_type_name(x._dtype)}")
    if k <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    cdef int64_t ncat = x._shape[x._ndim - 1]
    cdef int64_t rows = x._shape[0] if x._ndim == 2 else 1
    if not replacement and k > ncat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if ncat == 0:
        raise RuntimeError("multinomial: the probability distribution has no categories")
    cdef Generator g = _gen(generator, "multinomial")
    cdef TensorBase pf = contig(cast(x, EM_F64))
    cdef int64_t shp[2]
    if x._ndim == 2:
        shp[0] = rows
        shp[1] = k
    else:
        shp[0] = k
    cdef TensorBase t = new_tensor(x._ndim, shp, EM_I64, cpu_device())
    cdef uint64_t seed = g._seed, off = g._next()
    cdef const double *pp = <const double *>data_ptr(pf)
    cdef int64_t *op = <int64_t *>data_ptr(t)
    cdef int rc, rep = 1 if replacement else 0, nt = nthreads_for(rows * ncat * 4)
    with nogil:
        rc = em_multinomial(pp, rows, ncat, k, rep, op, seed, off, nt)
    if rc == 1:
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if rc == 2:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if rc == 3:
        raise RuntimeError("invalid multinomial distribution (with replacement=False, not "
                           "enough non-negative category to sample)")
    if rc:
        raise MemoryError("multinomial: out of memory")
    if isinstance(out, TensorBase):
        check_out_dtype(EM_I64, (<TensorBase>out)._dtype, OUT_EXACT, "multinomial")
    return finish_out(t, out, False, "multinomial", input)


# ----------------------------------------------------------------------------
# in-place samplers (Tensor methods)

cdef int _prelude(TensorBase t, str name) except -1:
    check_inplace(t, name)
    check_written(t, None, name)
    return 0


cdef object _out_dtype(object dtype, object out):
    """Samplers with out= and no dtype sample in out's dtype, as torch does."""
    if dtype is None and isinstance(out, TensorBase):
        return (<TensorBase>out).dtype
    return dtype


cdef TensorBase _fill_inplace(TensorBase t, str name, int dist, double a, double b,
                              object generator):
    """the end of every float sampler self.<name>(...): checks, fill, version bump"""
    _prelude(t, name)
    _fill_float(t, dist, a, b, _gen(generator, name))
    bump_version(t)
    return t


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with uniform samples from [from, to)."""
    cdef TensorBase t = <TensorBase>self
    if "from" in kwargs:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if needs_slow1(t):
        return _method_slow("uniform_", uniform_, t, (from_, to), _kw(generator=generator))
    if category(t._dtype) == 3:
        # torch's complex uniform: the real and imaginary parts each in [from, to)
        from ember._C import cplx
        uniform_(cplx.view_as_real(t), from_, to, generator=generator)
        return t
    _require_float(t, "check_uniform_bounds")
    a = float(_as_number(from_, "uniform_", "from"))
    b = float(_as_number(to, "uniform_", "to"))
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_num(from_)} > to={_num(to)}")
    return _fill_inplace(t, "uniform_", EM_RD_UNIFORM, a, b, generator)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples N(mean, std^2)."""
    cdef TensorBase t = <TensorBase>self
    if needs_slow1(t):
        return _method_slow("normal_", normal_, t, (mean, std), _kw(generator=generator))
    if category(t._dtype) == 3:
        # torch's complex normal: variance std^2 split evenly between the two parts
        from ember._C import cplx
        s = float(_as_number(std, "normal_", "std"))
        normal_(cplx.view_as_real(t), mean, s * 0.7071067811865476, generator=generator)
        return t
    _require_float(t, "normal_kernel_cpu")
    m = float(_as_number(mean, "normal_", "mean"))
    s = float(_as_number(std, "normal_", "std"))
    if not s >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    return _fill_inplace(t, "normal_", EM_RD_NORMAL, m, s, generator)


def random_(self, *args, to=None, generator=None, **kwargs):
    """random_(), random_(to), random_(from, to): uniform integers in [from, to);
    without bounds, [0, 2^mantissa] for floats and [0, max] for integers."""
    cdef TensorBase t = <TensorBase>self
    if needs_slow1(t):
        return _method_slow("random_", random_, t, args, dict(kwargs, **_kw(
            to=to, generator=generator)))
    frm = kwargs.pop("from", None)
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if len(args) == 1:
        if to is None and frm is None:
            to = args[0]
        else:
            frm = args[0]
    elif len(args) == 2:
        frm, to = args
    elif len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    for v in (frm, to):
        if v is not None and (isinstance(v, float) or scalar_category(v) == 2):
            raise TypeError(f"random_() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)}), but expected "
                            f"integer bounds")
    cdef int dt = t._dtype
    lo = 0 if frm is None else _as_int(frm, "random_", "from")
    if to is None:
        if dt in _INT_RANGE:
            hi = _INT_RANGE[dt][1] + 1
        else:
            hi = 2 ** _FLOAT_DIGITS[dt] + 1
        if lo >= hi:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={lo} >= to={hi}")
    else:
        hi = _as_int(to, "random_", "to")
        _check_range(dt, lo, hi, "random_")
    _prelude(t, "random_")
    _fill_int(t, <int64_t>lo, <uint64_t>((hi - lo) & 0xFFFFFFFFFFFFFFFF), _gen(generator,
                                                                             "random_"))
    bump_version(t)
    return t


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential samples of rate ``lambd``."""
    cdef TensorBase t = <TensorBase>self
    if needs_slow1(t):
        return _method_slow("exponential_", exponential_, t, (lambd,), _kw(generator=generator))
    if t._dtype < EM_F16:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{torch_type_name(t._dtype)}")
    lam = float(_as_number(lambd, "exponential_", "lambd"))
    if not lam > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    return _fill_inplace(t, "exponential_", EM_RD_EXPONENTIAL, lam, 0.0, generator)


def geometric_(self, p, *, generator=None):
    """Fill with geometric samples (number of trials to the first success)."""
    cdef TensorBase t = <TensorBase>self
    if needs_slow1(t):
        return _method_slow("geometric_", geometric_, t, (p,), _kw(generator=generator))
    pp = float(_as_number(p, "geometric_", "p"))
    if not (0.0 < pp < 1.0):
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    _prelude(t, "geometric_")
    if t._dtype == EM_BOOL:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    _fill_float(t, EM_RD_GEOMETRIC, pp, 0.0, _gen(generator, "geometric_"))
    bump_version(t)
    return t


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp(N(mean, std^2)) samples."""
    cdef TensorBase t = <TensorBase>self
    if needs_slow1(t):
        return _method_slow("log_normal_", log_normal_, t, (mean, std), _kw(generator=generator))
    _require_float(t, "log_normal_cpu")
    m = float(_as_number(mean, "log_normal_", "mean"))
    s = float(_as_number(std, "log_normal_", "std"))
    if not s > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    return _fill_inplace(t, "log_normal_", EM_RD_LOGNORMAL, m, s, generator)


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy samples."""
    cdef TensorBase t = <TensorBase>self
    if needs_slow1(t):
        return _method_slow("cauchy_", cauchy_, t, (median, sigma), _kw(generator=generator))
    if t._dtype < EM_F16:
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{torch_type_name(t._dtype)}")
    m = float(_as_number(median, "cauchy_", "median"))
    s = float(_as_number(sigma, "cauchy_", "sigma"))
    if not s > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    return _fill_inplace(t, "cauchy_", EM_RD_CAUCHY, m, s, generator)


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples: probability ``p`` (a float, or a tensor broadcast to self)."""
    cdef TensorBase t = <TensorBase>self
    if needs_slow1(t):
        return _method_slow("bernoulli_", bernoulli_, t, (p,), _kw(generator=generator))
    cdef Generator g = _gen(generator, "bernoulli_")
    if isinstance(p, TensorBase):
        check_same_device(t, <TensorBase>p, "bernoulli_", "p")
        _require_float(<TensorBase>p, "bernoulli_tensor_cpu_p_")
        _prelude(t, "bernoulli_")
        _fill_bernoulli_tensor(t, <TensorBase>p, g)
    else:
        pf = float(_as_number(p, "bernoulli_", "p"))
        if not (0.0 <= pf <= 1.0):
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
        _prelude(t, "bernoulli_")
        _fill_bernoulli(t, pf, g)
    bump_version(t)
    return t


# ----------------------------------------------------------------------------
# dropout: one pass producing the output and the keep-mask

def dropout(input, p, train=True, *, generator=None):
    """(output, mask) of dropout: mask (bool) keeps each element with probability
    1 - p; output = input * mask / (1 - p).  In eval mode (train=False) the
    input itself and an all-True mask."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"dropout(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    cdef TensorBase x = <TensorBase>input
    pp = float(_as_number(p, "dropout", "p"))
    if not (0.0 <= pp <= 1.0):
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {_num(p)}")
    if slow_path() or off_fast(x):
        return redispatch("native_dropout", dropout, (input, p, train), _kw(generator=generator))
    cdef TensorBase mask = _empty_shape(x, EM_BOOL)
    if not train:
        fill_scalar(mask, True)
        return x, mask
    if x._dtype < EM_F16:
        raise RuntimeError(f"dropout: expected a floating-point input, got "
                           f"{torch_type_name(x._dtype)}")
    cdef Generator g = _gen(generator, "dropout")
    cdef TensorBase xc = contig(x)
    cdef TensorBase out = _empty_shape(x, x._dtype)
    cdef int64_t n = numel_of(x._ndim, x._shape)
    cdef uint64_t seed = g._seed, off = g._next()
    cdef const char *xp = data_ptr(xc)
    cdef char *op = data_ptr(out)
    cdef uint8_t *mp = <uint8_t *>data_ptr(mask)
    cdef int dt = x._dtype, nt = _nthreads(n)
    cdef double pd = pp
    with nogil:
        em_dropout(dt, xp, op, mp, n, pd, seed, off, nt)
    if grad_on() and x._requires_grad:
        # out == input * (mask / (1 - p)): recorded as that product for autograd
        scale = 0.0 if pp >= 1.0 else 1.0 / (1.0 - pp)
        scaled = _ew.mul(cast(mask, dt), scale)
        record("mul", (input, scaled), out, None)
    return out, mask


def native_dropout(input, p, train=True, *, generator=None):
    """PyTorch's ``native_dropout``: (output, mask)."""
    return dropout(input, p, train, generator=generator)


# ----------------------------------------------------------------------------
# rejection samplers (src_c/samplers.c): parameters and draws pass as contiguous
# float64; each element has its own Philox stream

# a rejection draw costs tens of plain copies
cdef int _sampler_threads(int64_t n) noexcept:
    return nthreads_for(n * 64)


cdef TensorBase _f64(TensorBase t):
    return contig(cast(t, EM_F64))


cdef int _real_float(TensorBase t, str kernel) except -1:
    """The samplers take real floating parameters (torch has no complex kernels)."""
    if t._dtype < EM_F16 or t._dtype > EM_F64:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_type_name(t._dtype)}'")
    return 0


cdef TensorBase _sampler_input(TensorBase t):
    """float32 and float64 parameters go to the kernels as they are, others as float64"""
    return contig(t) if t._dtype == EM_F32 or t._dtype == EM_F64 else _f64(t)


cdef TensorBase _sampled(TensorBase draws, TensorBase like):
    return draws if draws._dtype == like._dtype else cast(draws, like._dtype)


def poisson(input, generator=None):
    """One Poisson draw per element of the rate tensor ``input`` (same dtype).

    Parameters
    ----------
    input : Tensor
        Non-negative rates (a floating dtype).
    generator : Generator, optional

    Returns
    -------
    Tensor
    """
    if not isinstance(input, TensorBase):
        raise TypeError(f"poisson(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    cdef TensorBase x = <TensorBase>input
    if slow_path() or off_fast(x):
        return _method_slow_new("poisson", poisson, x, (), _kw(generator=generator))
    _real_float(x, "poisson_cpu")
    cdef Generator g = _gen(generator, "poisson")
    cdef TensorBase r = _sampler_input(x)
    cdef TensorBase out = _empty_shape(x, r._dtype)
    cdef int64_t n = numel_of(x._ndim, x._shape), bad
    cdef uint64_t seed = g._seed, off = g._next()
    cdef const void *rp = data_ptr(r)
    cdef void *op = data_ptr(out)
    cdef int nt = _sampler_threads(n), dt = r._dtype
    with nogil:
        bad = em_sample_poisson(dt, rp, op, n, seed, off, nt)
    if bad:    # NaN too, as torch
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _sampled(out, x)


def binomial(count, prob, generator=None):
    """One Binomial(count, prob) draw per element (the tensors broadcast).

    Parameters
    ----------
    count : Tensor
        Numbers of trials (a floating dtype).
    prob : Tensor
        Success probabilities.
    generator : Generator, optional

    Returns
    -------
    Tensor
    """
    for v, name, pos in ((count, "count", 1), (prob, "prob", 2)):
        if not isinstance(v, TensorBase):
            raise TypeError(f"binomial(): argument '{name}' (position {pos}) must be Tensor, "
                            f"not {type(v).__name__}")
    cdef TensorBase c = <TensorBase>count, p = <TensorBase>prob
    if slow_path() or off_fast(c) or off_fast(p):
        return redispatch("binomial", binomial, (count, prob), _kw(generator=generator))
    if c._dtype < EM_F16 or c._dtype > EM_F64:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{torch_type_name(c._dtype)}")
    if p._dtype < EM_F16 or p._dtype > EM_F64:
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: "
                         f"{torch_type_name(p._dtype)}")
    if p._dtype != c._dtype:
        raise RuntimeError(f"Found dtype {torch_type_name(p._dtype)} but expected "
                           f"{torch_type_name(c._dtype)}")
    cdef int64_t shape[MAX_DIMS]
    cdef int nd = broadcast_shape(c._ndim, c._shape, p._ndim, p._shape, shape)
    sh = tuple([shape[i] for i in range(nd)])
    cdef Generator g = _gen(generator, "binomial")
    cdef TensorBase cc = _sampler_input(c.expand(sh)), pc = _sampler_input(p.expand(sh))
    cdef TensorBase out = new_tensor(nd, shape, cc._dtype, cpu_device())
    cdef int64_t n = numel_of(nd, shape)
    cdef uint64_t seed = g._seed, off = g._next()
    cdef const void *cp = data_ptr(cc)
    cdef const void *pp = data_ptr(pc)
    cdef void *op = data_ptr(out)
    cdef int nt = _sampler_threads(n), dt = cc._dtype
    with nogil:
        em_sample_binomial(dt, cp, pp, op, n, seed, off, nt)
    return out if out._dtype == c._dtype else cast(out, c._dtype)


def _standard_gamma(input, generator=None):
    """One Gamma(alpha, 1) draw per element of ``input`` (alpha), at least the
    smallest normal number of the dtype, as PyTorch's; differentiable in alpha
    through the implicit reparameterisation gradient (``_standard_gamma_grad``)."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"_standard_gamma(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(input).__name__}")
    cdef TensorBase x = <TensorBase>input
    if slow_path() or off_fast(x):
        return _method_slow_new("_standard_gamma", _standard_gamma, x, (),
                                _kw(generator=generator))
    _real_float(x, "gamma_cpu")
    cdef Generator g = _gen(generator, "_standard_gamma")
    cdef TensorBase a = _sampler_input(x)
    cdef TensorBase out = _empty_shape(x, a._dtype)
    cdef int64_t n = numel_of(x._ndim, x._shape)
    cdef uint64_t seed = g._seed, off = g._next()
    cdef const void *ap = data_ptr(a)
    cdef void *op = data_ptr(out)
    cdef int nt = _sampler_threads(n), dt = a._dtype
    # draws below the dtype's smallest normal number (NaN too) become it, as in PyTorch
    cdef double tiny = {EM_F64: 2.2250738585072014e-308, EM_F32: 1.1754943508222875e-38,
                        EM_F16: 6.103515625e-05, EM_BF16: 1.1754943508222875e-38}[x._dtype]
    with nogil:
        em_sample_gamma(dt, ap, op, n, seed, off, tiny, nt)
    r = _sampled(out, x)
    if grad_on() and x._requires_grad:
        record("_standard_gamma", (input,), r, None)
    return r


def _standard_gamma_grad(input, output):
    """d output / d input of Gamma(input, 1) draws ``output`` (PyTorch's
    ``_standard_gamma_grad``): exact series where it converges well, PyTorch's
    approximations in the far upper tail."""
    cdef TensorBase a = <TensorBase?>input, x = <TensorBase?>output
    cdef int64_t n = numel_of(x._ndim, x._shape)
    if numel_of(a._ndim, a._shape) != n:
        a = a.expand(x.shape)
    cdef TensorBase ac = _f64(a), xc = _f64(x)
    cdef TensorBase out = _empty_shape(x, EM_F64)
    cdef const double *ap = <const double *>data_ptr(ac)
    cdef const double *xp = <const double *>data_ptr(xc)
    cdef double *op = <double *>data_ptr(out)
    cdef int nt = _sampler_threads(n)
    with nogil:
        em_standard_gamma_grad(ap, xp, op, n, nt)
    return _sampled(out, x)
