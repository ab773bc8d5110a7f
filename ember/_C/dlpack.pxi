# DLPack, part of ember._C.core (included by core.pyx): the ABI (v1.0), declared here
# so ember needs no external header, then export (Tensor.__dlpack__) and from_dlpack.
cdef extern from *:
    """
    #include <stdint.h>
    typedef enum { kDLCPU = 1, kDLCUDA = 2 } DLDeviceType;
    typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 } DLDataTypeCode;
    typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
    typedef struct {
        void *data; DLDevice device; int32_t ndim; DLDataType dtype;
        int64_t *shape; int64_t *strides; uint64_t byte_offset;
    } DLTensor;
    typedef struct DLManagedTensor {
        DLTensor dl_tensor; void *manager_ctx; void (*deleter)(struct DLManagedTensor *self);
    } DLManagedTensor;
    typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
    typedef struct DLManagedTensorVersioned {
        DLPackVersion version; void *manager_ctx;
        void (*deleter)(struct DLManagedTensorVersioned *self);
        uint64_t flags; DLTensor dl_tensor;
    } DLManagedTensorVersioned;
    """
    enum:
        kDLCPU
        kDLCUDA
        kDLInt
        kDLUInt
        kDLFloat
        kDLBfloat
        kDLComplex
        kDLBool
    ctypedef struct DLDevice:
        int32_t device_type
        int32_t device_id
    ctypedef struct DLDataType:
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct DLTensor:
        void *data
        DLDevice device
        int32_t ndim
        DLDataType dtype
        int64_t *shape
        int64_t *strides
        uint64_t byte_offset
    ctypedef struct DLManagedTensor:
        DLTensor dl_tensor
        void *manager_ctx
        void (*deleter)(DLManagedTensor *) noexcept
    ctypedef struct DLPackVersion:
        uint32_t major
        uint32_t minor
    ctypedef struct DLManagedTensorVersioned:
        DLPackVersion version
        void *manager_ctx
        void (*deleter)(DLManagedTensorVersioned *) noexcept
        uint64_t flags
        DLTensor dl_tensor


cdef class _DLOwner:
    """Keeps an imported DLPack tensor alive; calls its deleter when freed."""
    cdef void *managed
    cdef bint versioned
    cdef object capsule

    def __dealloc__(self):
        if self.managed == NULL:
            return
        if self.versioned:
            if (<DLManagedTensorVersioned *>self.managed).deleter != NULL:
                (<DLManagedTensorVersioned *>self.managed).deleter(
                    <DLManagedTensorVersioned *>self.managed)
        elif (<DLManagedTensor *>self.managed).deleter != NULL:
            (<DLManagedTensor *>self.managed).deleter(<DLManagedTensor *>self.managed)


cdef struct _ExportCtx:
    int64_t shape[MAX_DIMS]
    int64_t strides[MAX_DIMS]
    void *pyref


cdef void _dl_deleter(DLManagedTensor *m) noexcept with gil:
    cdef _ExportCtx *ctx = <_ExportCtx *>m.manager_ctx
    Py_DECREF(<object>ctx.pyref)
    free(ctx)
    free(m)


cdef void _dlv_deleter(DLManagedTensorVersioned *m) noexcept with gil:
    cdef _ExportCtx *ctx = <_ExportCtx *>m.manager_ctx
    Py_DECREF(<object>ctx.pyref)
    free(ctx)
    free(m)


cdef void _capsule_destructor(object cap) noexcept:
    # called when a capsule is dropped without being consumed
    cdef DLManagedTensor *m
    cdef DLManagedTensorVersioned *mv
    if PyCapsule_IsValid(cap, "dltensor"):
        m = <DLManagedTensor *>PyCapsule_GetPointer(cap, "dltensor")
        if m.deleter != NULL:
            m.deleter(m)
    elif PyCapsule_IsValid(cap, "dltensor_versioned"):
        mv = <DLManagedTensorVersioned *>PyCapsule_GetPointer(cap, "dltensor_versioned")
        if mv.deleter != NULL:
            mv.deleter(mv)


cdef DLDataType _dl_dtype(int dt):
    cdef DLDataType r
    r.lanes = 1
    r.bits = em_itemsize[dt] * 8
    if dt == EM_BOOL:
        r.code = kDLBool
    elif dt == EM_U8:
        r.code = kDLUInt
    elif dt <= EM_I64:
        r.code = kDLInt
    elif dt == EM_BF16:
        r.code = kDLBfloat
    elif dt == EM_C64 or dt == EM_C128:
        r.code = kDLComplex
    else:
        r.code = kDLFloat
    return r


cdef object _to_dlpack(TensorBase t, bint versioned):
    cdef _ExportCtx *ctx = <_ExportCtx *>malloc(sizeof(_ExportCtx))
    cdef DLTensor *dl
    cdef DLManagedTensor *m = NULL
    cdef DLManagedTensorVersioned *mv = NULL
    cdef int i
    for i in range(t._ndim):
        ctx.shape[i] = t._shape[i]
        ctx.strides[i] = t._strides[i]
    ctx.pyref = <void *>t
    Py_INCREF(t)
    if versioned:
        mv = <DLManagedTensorVersioned *>malloc(sizeof(DLManagedTensorVersioned))
        mv.version.major = 1
        mv.version.minor = 0
        mv.manager_ctx = ctx
        mv.deleter = _dlv_deleter
        mv.flags = 0
        dl = &mv.dl_tensor
    else:
        m = <DLManagedTensor *>malloc(sizeof(DLManagedTensor))
        m.manager_ctx = ctx
        m.deleter = _dl_deleter
        dl = &m.dl_tensor
    dl.data = _ptr(t)
    dl.device.device_type = kDLCPU
    dl.device.device_id = 0
    dl.ndim = t._ndim
    dl.dtype = _dl_dtype(t._dtype)
    dl.shape = ctx.shape
    dl.strides = ctx.strides
    dl.byte_offset = 0
    if versioned:
        return PyCapsule_New(mv, "dltensor_versioned", _capsule_destructor)
    return PyCapsule_New(m, "dltensor", _capsule_destructor)


def from_dlpack(ext):
    """Import a tensor from any object with ``__dlpack__`` (or a DLPack capsule), zero-copy."""
    if hasattr(ext, "__dlpack__"):
        dev = ext.__dlpack_device__() if hasattr(ext, "__dlpack_device__") else (kDLCPU, 0)
        if dev[0] != kDLCPU:
            raise RuntimeError(f"from_dlpack: only CPU tensors can be imported in this build "
                               f"(device type {dev[0]})")
        try:
            cap = ext.__dlpack__(max_version=(1, 0))
        except TypeError:
            cap = ext.__dlpack__()
    else:
        cap = ext
    cdef DLTensor *dl
    cdef _DLOwner owner = _DLOwner.__new__(_DLOwner)
    if PyCapsule_IsValid(cap, "dltensor_versioned"):
        mv = <DLManagedTensorVersioned *>PyCapsule_GetPointer(cap, "dltensor_versioned")
        if mv.version.major > 1:
            raise BufferError(f"from_dlpack: DLPack version {mv.version.major} is newer than "
                              f"the supported 1.x")
        dl = &mv.dl_tensor
        owner.managed = mv
        owner.versioned = True
        PyCapsule_SetName(cap, "used_dltensor_versioned")
    elif PyCapsule_IsValid(cap, "dltensor"):
        m = <DLManagedTensor *>PyCapsule_GetPointer(cap, "dltensor")
        dl = &m.dl_tensor
        owner.managed = m
        owner.versioned = False
        PyCapsule_SetName(cap, "used_dltensor")
    else:
        raise TypeError("from_dlpack: expected an object with __dlpack__ or a DLPack capsule")
    if dl.device.device_type != kDLCPU:
        raise RuntimeError("from_dlpack: only CPU tensors are supported in this build")
    cdef int dt = -1
    if dl.dtype.lanes != 1:
        raise BufferError("from_dlpack: vector dtypes are not supported")
    code, bits = dl.dtype.code, dl.dtype.bits
    if code == kDLBool or (code == kDLUInt and bits == 8 and False):
        dt = EM_BOOL
    elif code == kDLUInt and bits == 8:
        dt = EM_U8
    elif code == kDLInt:
        dt = {8: EM_I8, 16: EM_I16, 32: EM_I32, 64: EM_I64}.get(bits, -1)
    elif code == kDLFloat:
        dt = {16: EM_F16, 32: EM_F32, 64: EM_F64}.get(bits, -1)
    elif code == kDLBfloat and bits == 16:
        dt = EM_BF16
    elif code == kDLComplex:
        dt = {64: EM_C64, 128: EM_C128}.get(bits, -1)
    if dt < 0:
        raise BufferError(f"from_dlpack: unsupported DLPack dtype (code {code}, bits {bits})")
    cdef int nd = dl.ndim, i
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    check_ndim(nd, "from_dlpack")
    for i in range(nd):
        shp[i] = dl.shape[i]
    shape_numel(nd, shp, "from_dlpack")
    if dl.strides == NULL:
        _contig_strides(nd, shp, st)
    else:
        for i in range(nd):
            st[i] = dl.strides[i]
            if st[i] < 0 and shp[i] > 1:
                raise RuntimeError(f"from_dlpack: tensors with negative strides are not "
                                   f"supported (strides={[dl.strides[j] for j in range(nd)]}); "
                                   f"copy the array first (e.g. numpy's array.copy())")
            if st[i] < 0:
                st[i] = 0
    return _wrap_foreign(<char *>dl.data + dl.byte_offset, nd, shp, st, dt, owner, "from_dlpack")
