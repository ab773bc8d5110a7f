# Tensor creation, part of ember._C.core (included by core.pyx): tensors from
# nested Python data, NumPy arrays and foreign memory, and the shape factories
# (empty, zeros, ones, full and their *_like forms).

cdef object _infer_nested(object data, list shape, int depth, list path):
    """Walk nested sequences: fill `shape`, return the promoted scalar category.
    `path` holds the sequences being walked: nesting deeper than MAX_DIMS is an
    error, and a self-referential one is told apart from a merely deep one."""
    cdef int cat = -1, c
    if isinstance(data, TensorBase):
        t = <TensorBase>data
        for i in range(t._ndim):
            if depth + i >= len(shape):
                shape.append(t._shape[i])
        return 16 + t._dtype
    if isinstance(data, (list, tuple)):
        if depth >= MAX_DIMS:
            ids = set()
            for p in path + [data]:
                if id(p) in ids:
                    raise TypeError(f"tensor(): self-referential {type(data).__name__}s are "
                                    f"incompatible")
                ids.add(id(p))
            raise ValueError(f"too many dimensions '{type(data).__name__}': ember supports at "
                             f"most {MAX_DIMS} dims")
        n = len(data)
        if depth == len(shape):
            shape.append(n)
        elif shape[depth] != n:
            raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} "
                             f"(got {n})")
        path.append(data)
        for x in data:
            c = _infer_nested(x, shape, depth + 1, path)
            cat = c if cat < 0 else (c if c > cat else cat)
        path.pop()
        return cat
    if depth < len(shape):
        raise ValueError(f"expected a sequence at dim {depth} but got {type(data).__name__}")
    c = scalar_category(data)
    if c < 0:
        raise TypeError(f"tensor(): could not infer dtype of {type(data).__name__}")
    return c


cdef void _fill_nested(object data, TensorBase t, int d, char *p) except *:
    cdef int64_t st = t._strides[d] * em_itemsize[t._dtype] if d < t._ndim else 0
    cdef int64_t i = 0
    if isinstance(data, TensorBase):
        dst = make_view(t, t._ndim - d, &t._shape[d], &t._strides[d],
                        (p - t._storage.data) // em_itemsize[t._dtype])
        copy_into(dst, <TensorBase>data)
        return
    if d == t._ndim:
        scalar_to_buf(data, t._dtype, p)
        return
    for x in data:
        _fill_nested(x, t, d + 1, p + i * st)
        i += 1


cdef TensorBase _tensor_from_data(object data, int dt, object device):
    cdef TensorBase t
    cdef int64_t shp[MAX_DIMS]
    cdef int c
    if isinstance(data, TensorBase):
        return cast(contig(<TensorBase>data), dt if dt >= 0 else (<TensorBase>data)._dtype).clone() \
            if dt < 0 or dt == (<TensorBase>data)._dtype else cast(<TensorBase>data, dt)
    if hasattr(data, "__array_interface__") or (hasattr(data, "__array__") and
                                                not isinstance(data, (list, tuple))):
        src = _from_array_like(data, True)
        return cast(src, dt).clone() if dt >= 0 and dt != src._dtype else src.clone()
    shape = []
    c = _infer_nested(data, shape, 0, [])
    check_ndim(len(shape), "tensor")
    if dt < 0:
        # no elements -> the default dtype; tensors nested in lists keep theirs
        dt = EM_BOOL if c == 0 else (EM_I64 if c == 1 else (
            c - 16 if c >= 16 else (complex_of(_default_dtype) if c == 3 else _default_dtype)))
    for i in range(len(shape)):
        shp[i] = shape[i]
    t = new_tensor(len(shape), shp, dt, _cpu)
    if numel_of(t._ndim, t._shape):
        _fill_nested(data, t, 0, t._storage.data)
    return t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Construct a tensor by copying ``data`` (nested sequences, scalars, arrays).

    Examples
    --------
    >>> import ember
    >>> ember.tensor([[1., 2.]])
    tensor([[1., 2.]])
    """
    if _slow:
        return redispatch("tensor", tensor, (data,),
                          _factory_kw(dtype, device, requires_grad, None))
    cdef TensorBase t = _tensor_from_data(data, dtype_code(dtype), device)
    cdef Device dev = as_device(device)
    if dev.kind != DEV_CPU:
        t = t.to(dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


cdef TensorBase _from_array_like(object arr, bint allow_copy):
    """Zero-copy wrap of an object with __array_interface__ (NumPy arrays)."""
    if not hasattr(arr, "__array_interface__"):
        import numpy
        arr = numpy.asarray(arr)
    ai = arr.__array_interface__
    d = _dtype_from_typestr(ai["typestr"])
    if d is None:
        if allow_copy:
            import numpy
            a2 = numpy.asarray(arr)
            if a2.dtype.kind in "iu" and a2.dtype.itemsize == 8 and a2.dtype.kind == "u":
                raise TypeError(f"can't convert np.ndarray of type {a2.dtype}. The only "
                                f"supported types are: float64, float32, float16, int64, int32, "
                                f"int16, int8, uint8, and bool.")
            if a2.dtype.byteorder == ">":
                return _from_array_like(a2.astype(a2.dtype.newbyteorder("=")), False)
        raise TypeError(f"can't convert np.ndarray of type {getattr(arr, 'dtype', ai['typestr'])}. "
                        f"The only supported types are: float64, float32, float16, int64, "
                        f"int32, int16, int8, uint8, and bool.")
    cdef int dt = (<DType>d).code
    cdef int isz = em_itemsize[dt]
    strides = ai.get("strides")
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int nd = seq_to_dims(ai["shape"], shp, "from_numpy"), i
    if strides is None:
        _contig_strides(nd, shp, st)
    else:
        if seq_to_dims(strides, st, "from_numpy") != nd:
            raise ValueError("from_numpy: __array_interface__ has strides of a different length "
                             "than its shape")
        for i in range(nd):
            if st[i] < 0:
                raise ValueError("At least one stride in the given numpy array is negative, and "
                                 "tensors with negative strides are not currently supported. "
                                 "(You can probably work around this by making a copy of your "
                                 "array with array.copy().)")
            if st[i] % isz:
                raise ValueError("given numpy array strides not a multiple of the element byte "
                                 "size. Copy the numpy array to reallocate the memory.")
            st[i] //= isz
    ptr, _ro = ai["data"]
    return _wrap_foreign(<char *><size_t>ptr, nd, shp, st, dt, arr, "from_numpy")


cdef void _contig_strides(int nd, const int64_t *shp, int64_t *st) noexcept:
    """Row-major strides (elements) of a shape already checked by shape_numel."""
    cdef int64_t acc = 1
    cdef int i
    for i in range(nd - 1, -1, -1):
        st[i] = acc
        acc *= shp[i] if shp[i] > 1 else 1


cdef int64_t _span(int nd, const int64_t *shp, const int64_t *st, int64_t offset,
                   str op) except -1:
    """Elements from the storage start to one past the last element a non-empty
    view (non-negative sizes and strides) reaches, overflow-checked."""
    cdef int64_t span = offset + 1, ext
    cdef int i
    for i in range(nd):
        ext = em_mul_size(shp[i] - 1, st[i])
        if ext < 0 or ext > INT64_MAX - span:
            raise RuntimeError(f"{op}: Storage size calculation overflowed with sizes="
                               f"{_dims_list(nd, shp)} and strides={_dims_list(nd, st)}")
        span += ext
    return span


cdef TensorBase _wrap_foreign(char *data, int nd, const int64_t *shp, const int64_t *st, int dt,
                              object owner, str op):
    """A CPU tensor over foreign memory kept alive by `owner`; the storage spans
    exactly the elements the (non-negative) strides reach."""
    cdef int64_t n = shape_numel(nd, shp, op)
    cdef int i
    cdef Storage s = Storage.__new__(Storage)
    s.data = data
    s._nbytes = mul_sizes(_span(nd, shp, st, 0, op), em_itemsize[dt], op) if n else 0
    s.owner = owner
    s.device = _cpu
    cdef TensorBase t = TensorBase.__new__(TensorType)
    t._storage = s
    t._offset = 0
    t._ndim = nd
    t._dtype = dt
    t._device = _cpu
    for i in range(nd):
        t._shape[i] = shp[i]
        t._strides[i] = st[i]
    return t


def from_numpy(ndarray):
    """A tensor sharing memory with a NumPy array."""
    if not hasattr(ndarray, "__array_interface__") or type(ndarray).__module__ != "numpy":
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return _from_array_like(ndarray, False)


def as_tensor(data, dtype=None, device=None):
    """Convert to a tensor, sharing memory when possible (tensors, NumPy arrays)."""
    cdef int dt = dtype_code(dtype)
    cdef TensorBase t
    if isinstance(data, TensorBase):
        t = <TensorBase>data
        if dt >= 0 and dt != t._dtype:
            t = t._cast(dt)
        return t.to(device) if device is not None else t
    if type(data).__module__ == "numpy" and hasattr(data, "__array_interface__"):
        try:
            t = _from_array_like(data, False)
        except TypeError:
            t = _tensor_from_data(data, -1, None)
        t = t._cast(dt) if dt >= 0 else t
        return t.to(device) if device is not None else t
    return tensor(data, dtype=dtype, device=device)


def _make_tensor(size_t ptr, shape, strides, dtype, device, owner, int64_t offset=0,
                 int64_t nbytes=-1):
    """Build a tensor over memory `owner` keeps alive (for plugin backends and loaders)."""
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int nd = seq_to_dims(shape, shp, "_make_tensor"), i
    cdef int dt = dtype_code(dtype)
    cdef int64_t n = shape_numel(nd, shp, "_make_tensor")
    if strides is None:
        _contig_strides(nd, shp, st)
    elif seq_to_dims(strides, st, "_make_tensor") != nd:
        raise RuntimeError("_make_tensor: mismatch in length of strides and shape")
    cdef Storage s = Storage.__new__(Storage)
    s.data = <char *>ptr
    s._nbytes = nbytes if nbytes >= 0 else mul_sizes(offset + n, em_itemsize[dt], "_make_tensor")
    s.owner = owner if owner is not None else False
    s.device = as_device(device)
    cdef TensorBase t = TensorBase.__new__(TensorType)
    t._storage = s
    t._offset = offset
    t._ndim = nd
    t._dtype = dt
    t._device = s.device
    for i in range(nd):
        t._shape[i] = shp[i]
        t._strides[i] = st[i]
    return t


def _from_storage(Storage s, shape, strides, dtype, int64_t offset=0):
    """A tensor viewing an existing Storage (serialization rebuilds views with this)."""
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int nd = seq_to_dims(shape, shp, "_from_storage"), i
    if seq_to_dims(strides, st, "_from_storage") != nd:
        raise RuntimeError("_from_storage: mismatch in length of strides and shape")
    shape_numel(nd, shp, "_from_storage")
    cdef TensorBase t = TensorBase.__new__(TensorType)
    t._storage = s
    t._offset = offset
    t._ndim = nd
    t._dtype = dtype_code(dtype)
    t._device = s.device
    for i in range(nd):
        t._shape[i] = shp[i]
        t._strides[i] = st[i]
    return t


def _check_size(shape, dtype=None, str op=""):
    """Refuse, before any work, an output of `shape` that cannot exist: more than
    MAX_DIMS dims, a negative size, a byte size past int64 (RuntimeError naming
    `op`) or one the allocator cannot provide (torch's DefaultCPUAllocator
    error).  Ops that compute an output size from their arguments call this
    first, so an absurd size fails in microseconds.  Returns the numel."""
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = seq_to_dims(shape, shp, op)
    cdef int dt = dtype_code(dtype)
    cdef int64_t nbytes = check_alloc(nd, shp, _default_dtype if dt < 0 else dt, op)
    # a large block goes straight back to the allocator's cache for the real output
    if nbytes >= (<int64_t>1 << 30):
        _alloc_storage(nbytes, _cpu)
    return nbytes // em_itemsize[_default_dtype if dt < 0 else dt]


def _new_storage(int64_t nbytes, device=None):
    return _alloc_storage(nbytes, as_device(device))


cdef TensorBase _factory(tuple size, dtype, device, str op, bint float_only=False):
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = parse_shape(size, shp, op)
    cdef int dt = dtype_code(dtype)
    if dt < 0:
        dt = _default_dtype
    check_alloc(nd, shp, dt, op)
    cdef Device dev = as_device(device)
    if dev.kind == DEV_PLUGIN:
        kern = _backend_kernels.get(dev.type, {}).get("empty")
        if kern is None:
            raise NotImplementedError(f"{op}: no 'empty' kernel registered for '{dev.type}'")
        return kern(tuple([shp[i] for i in range(nd)]), _dtypes[dt], dev)
    return new_tensor(nd, shp, dt, dev)


cdef dict _factory_kw(dtype, device, requires_grad, out):
    """The keywords a factory was given, for a Python mode to see (defaults left out)."""
    cdef dict kw = {}
    if dtype is not None:
        kw["dtype"] = dtype
    if device is not None:
        kw["device"] = device
    if requires_grad:
        kw["requires_grad"] = True
    if out is not None:
        kw["out"] = out
    return kw


cdef object finish_out(TensorBase t, object out, bint requires_grad, str op=None,
                       object inputs=None):
    """The end of every factory: copy into ``out=`` (same shape) or set requires_grad.
    With `op`, out= is checked as a written-to tensor (zeros/ones/full/empty fill an
    expanded out= with one value, which torch allows)."""
    cdef TensorBase o
    if out is not None:
        if not isinstance(out, TensorBase):
            raise TypeError(f"out= must be an ember.Tensor, not {type(out).__name__}")
        o = <TensorBase>out
        if shape_tuple(o) != shape_tuple(t):
            raise RuntimeError(f"out= has shape {list(shape_tuple(o))} but the result has shape "
                               f"{list(shape_tuple(t))}")
        if op is not None:
            check_written(o, inputs, op)
        copy_into(o, t)
        o._storage.version += 1
        return o
    if requires_grad:
        t.requires_grad_(True)
    return t


cdef object _fill_any(TensorBase t, v):
    if t._device.kind == DEV_PLUGIN:
        kern = _backend_kernels.get(t._device.type, {}).get("fill_")
        if kern is None:
            raise NotImplementedError(f"fill_: no kernel registered for '{t._device.type}'")
        kern(t, v)
    else:
        fill_scalar(t, v)
    return t


def empty(*size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False,
          memory_format=None, out=None):
    """A tensor of the given shape with uninitialised values."""
    if _slow:
        return redispatch("empty", empty, size, _factory_kw(dtype, device, requires_grad, out))
    if memory_format is not None:
        return _empty_in_format(size, memory_format, dtype, device, requires_grad, out)
    return finish_out(_factory(size, dtype, device, "empty"), out, requires_grad)


cdef object _empty_in_format(tuple size, fmt, dtype, device, bint requires_grad, out):
    mf = _memfmt()
    if mf._check(fmt, "empty") is mf.preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    cdef TensorBase t = _factory(size, dtype, device, "empty")
    mf._require_rank(t._ndim, fmt)
    if out is not None or fmt is mf.contiguous_format:
        return finish_out(t, out, requires_grad)
    return finish_out(mf.empty(shape_tuple(t), fmt, dtype=t.dtype, device=t._device), None,
                      requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, layout=None, out=None):
    """A tensor filled with 0."""
    if _slow:
        return redispatch("zeros", zeros, size, _factory_kw(dtype, device, requires_grad, out))
    return finish_out(<TensorBase>_fill_any(_factory(size, dtype, device, "zeros"), 0), out,
                      requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, layout=None, out=None):
    """A tensor filled with 1."""
    if _slow:
        return redispatch("ones", ones, size, _factory_kw(dtype, device, requires_grad, out))
    return finish_out(<TensorBase>_fill_any(_factory(size, dtype, device, "ones"), 1), out,
                      requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
         out=None):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value)."""
    if _slow:
        return redispatch("full", full, (size, fill_value),
                          _factory_kw(dtype, device, requires_grad, out))
    if dtype is None:
        c = scalar_category(fill_value)
        if isinstance(fill_value, TensorBase):
            dtype = fill_value.dtype
        elif c < 0:
            raise TypeError(f"full(): fill_value must be a number, got {type(fill_value).__name__}")
        else:
            dtype = _dtypes[_wrapped_dtype(c)]
    if isinstance(size, int):
        size = (size,)
    return finish_out(<TensorBase>_fill_any(_factory((tuple(size),), dtype, device, "full"),
                                            fill_value), out, requires_grad)


cdef object _like_args(TensorBase t, dtype, device):
    return (t.dtype if dtype is None else dtype, t._device if device is None else device)


cdef object _like_format(TensorBase input, memory_format, str op):
    """The memory format a ``*_like`` factory lays its result out in, or None for
    row-major (the fast path)."""
    if memory_format is None and not _maybe_channels_last(input):
        return None
    return _memfmt().like(input, memory_format, op)


cdef object _empty_like_in(TensorBase input, fmt, d, dev):
    return _memfmt().empty(shape_tuple(input), fmt, dtype=d, device=dev)


cdef TensorBase _filled_like(TensorBase input, fmt, d, dev, v):
    return <TensorBase>_fill_any(<TensorBase>_empty_like_in(input, fmt, d, dev), v)


def empty_like(TensorBase input not None, *, dtype=None, device=None, requires_grad=False,
               layout=None, memory_format=None):
    d, dev = _like_args(input, dtype, device)
    fmt = _like_format(input, memory_format, "empty_like")
    if fmt is not None:
        return finish_out(<TensorBase>_empty_like_in(input, fmt, d, dev), None, requires_grad)
    return empty(shape_tuple(input), dtype=d, device=dev, requires_grad=requires_grad)


def zeros_like(TensorBase input not None, *, dtype=None, device=None, requires_grad=False,
               layout=None, memory_format=None):
    d, dev = _like_args(input, dtype, device)
    fmt = _like_format(input, memory_format, "zeros_like")
    if fmt is not None:
        return finish_out(_filled_like(input, fmt, d, dev, 0), None, requires_grad)
    return zeros(shape_tuple(input), dtype=d, device=dev, requires_grad=requires_grad)


def ones_like(TensorBase input not None, *, dtype=None, device=None, requires_grad=False,
              layout=None, memory_format=None):
    d, dev = _like_args(input, dtype, device)
    fmt = _like_format(input, memory_format, "ones_like")
    if fmt is not None:
        return finish_out(_filled_like(input, fmt, d, dev, 1), None, requires_grad)
    return ones(shape_tuple(input), dtype=d, device=dev, requires_grad=requires_grad)


def full_like(TensorBase input not None, fill_value, *, dtype=None, device=None, requires_grad=False,
              layout=None, memory_format=None):
    d, dev = _like_args(input, dtype, device)
    fmt = _like_format(input, memory_format, "full_like")
    if fmt is None:
        return full(shape_tuple(input), fill_value, dtype=d, device=dev,
                    requires_grad=requires_grad)
    return finish_out(_filled_like(input, fmt, d, dev, fill_value), None, requires_grad)
