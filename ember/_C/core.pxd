# The typed contract of ember's native core: other Cython modules `cimport` this
# to reach TensorBase's C fields and the core helpers without Python overhead.
from libc.stdint cimport int64_t, uint8_t, uint16_t


cdef extern from "ember.h" nogil:
    enum:
        EM_BOOL
        EM_U8
        EM_I8
        EM_I16
        EM_I32
        EM_I64
        EM_F16
        EM_BF16
        EM_F32
        EM_F64
        EM_C64
        EM_C128
        EM_NDTYPES
    const int em_itemsize[]
    ctypedef void (*em_loop)(char **ptrs, const int64_t *strides, int64_t n,
                             const void *aux) noexcept nogil
    void em_run_nd(em_loop fn, int nargs, char **ptrs, int ndim, const int64_t *shape,
                   const int64_t *strides, const void *aux, int nthreads)
    em_loop em_cast_loop(int dst_dtype, int src_dtype)
    void em_fill(int dtype, char *dst, int64_t stride, int64_t n, const void *value,
                 int nthreads)
    int ember_cpu_isa()
    const char *ember_isa_name(int isa)
    float em_h2f(uint16_t h)
    uint16_t em_f2h(float f)
    float em_bf2f(uint16_t h)
    uint16_t em_f2bf(float f)
    int64_t em_mul_size(int64_t a, int64_t b)
    void *em_alloc(size_t nbytes)
    void em_free(void *p, size_t nbytes)
    enum: EM_ALLOC_NSTATS
    void em_alloc_stats(int64_t *out, int n)
    void em_alloc_reset_peak()
    void em_alloc_empty_cache()
    int ember_cpu_has(const char *feature)
    int ember_set_flush_denormal(int on, int nthreads)

cdef enum:
    MATH_CONJ = 1
    MATH_NEG = 2

cdef enum:
    MAX_DIMS = 16
    MAX_ARGS = 8
    DEV_CPU = 0
    DEV_CUDA = 1
    DEV_PLUGIN = 2
    DEV_META = 3
    DEV_ABSENT = 4      # a device type PyTorch knows that ember has no backend for


cdef class DType:
    cdef readonly int code
    cdef readonly int itemsize
    cdef readonly str _name
    cdef readonly bint is_floating_point
    cdef readonly bint is_signed
    cdef readonly bint is_complex


cdef class Device:
    cdef readonly str type
    cdef readonly object index
    cdef int kind


cdef class Storage:
    cdef char *data
    cdef int64_t _nbytes
    cdef object owner          # keeps foreign memory alive; None when we own data
    cdef readonly Device device
    cdef public int64_t version  # shared by every view: autograd's version counter
    cdef object __weakref__


cdef class TensorBase:
    cdef Storage _storage
    cdef int64_t _offset       # in elements
    cdef int _ndim
    cdef int _dtype
    cdef int64_t _shape[MAX_DIMS]
    cdef int64_t _strides[MAX_DIMS]   # in elements
    cdef Device _device
    cdef public bint _requires_grad
    cdef public object _grad
    cdef public object _grad_fn
    cdef readonly bint _inference   # made under inference_mode (views inherit it)
    # autograd's state beyond the grad fields (ember.autograd reads and writes them)
    cdef public object _ag_nr          # (node, output_nr) for outputs of multi-output ops
    cdef public object _ag_acc         # weak reference to a leaf's AccumulateGrad node
    cdef public object _ag_hooks       # a leaf's tensor hooks {id: fn}
    cdef public object _ag_post_hooks  # a leaf's post-accumulate-grad hooks
    cdef public object _ag_base        # a view's base: the tensor that owns its memory
    cdef public int64_t _ag_ver        # the storage version when a view's grad_fn was set
    # torch's lazy math bits (MATH_CONJ, MATH_NEG): the values read are the conjugate /
    # negation of the ones stored; views share them, kernels see them resolved
    cdef public int _mbits


# A broadcast, coalesced iteration over up to MAX_ARGS operands (arg 0 = output).
cdef struct NdIter:
    int nargs
    int ndim
    int64_t numel
    int64_t shape[MAX_DIMS]
    int64_t strides[MAX_ARGS * MAX_DIMS]   # [arg][dim], bytes
    char *ptrs[MAX_ARGS]


cdef DType dtype_obj(int code)
cdef int dtype_code(object d) except -2          # -1 for None
cdef Device as_device(object d)
cdef Device cpu_device()
cdef int default_dtype() noexcept
cdef object default_device()
cdef int promote(int a, int b) noexcept
cdef int category(int d) noexcept
cdef int real_of(int d) noexcept
cdef int complex_of(int d) noexcept
cdef int scalar_category(object v) noexcept      # -1 when v is not a Python number
cdef int result_type2(object a, object b) except -1

cdef TensorBase new_tensor(int ndim, const int64_t *shape, int dtype, Device device)
cdef TensorBase new_like(TensorBase t, int dtype)
cdef TensorBase make_view(TensorBase base, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset)
cdef TensorBase wrap_scalar(object v, int dtype)
cdef int64_t numel_of(int ndim, const int64_t *shape) noexcept nogil
cdef bint is_contig(TensorBase t) noexcept nogil
cdef TensorBase contig(TensorBase t)
cdef TensorBase cast(TensorBase t, int dtype)
cdef int apply_bits(TensorBase t, int bits) except -1
cdef TensorBase resolve_bits(TensorBase t)
cdef int copy_into(TensorBase dst, TensorBase src) except -1
cdef int fill_scalar(TensorBase dst, object v) except -1
cdef int scalar_to_buf(object v, int dtype, void *buf) except -1
cdef object buf_to_scalar(const void *buf, int dtype)
cdef tuple shape_tuple(TensorBase t)
cdef int parse_shape(object args, int64_t *out, str op) except -1
cdef int seq_to_dims(object seq, int64_t *out, str op) except -1
cdef int64_t shape_numel(int ndim, const int64_t *shape, str op) except -1
cdef int too_many_dims(Py_ssize_t ndim, str op) except -1
cdef int64_t mul_sizes(int64_t a, int64_t b, str op) except -1
cdef int64_t int64_arg(object v, str op, str name) except? -1
cdef int64_t check_alloc(int ndim, const int64_t *shape, int dtype, str op) except -1


# Every fill of a fixed MAX_DIMS shape/stride array from a count the caller does
# not control (a Python sequence, an array interface, DLPack, a nested list, a
# rank that grows) is guarded by check_ndim first.
cdef inline int check_ndim(Py_ssize_t ndim, str op) except -1:
    if ndim > MAX_DIMS or ndim < 0:
        return too_many_dims(ndim, op)
    return 0
cdef int wrap_dim(int64_t d, int ndim, str op) except -100
cdef int broadcast_shape(int nda, const int64_t *sa, int ndb, const int64_t *sb,
                         int64_t *out) except -1
cdef int iter_init(NdIter *it, list ops, int ndim, const int64_t *shape) except -1
cdef void iter_coalesce(NdIter *it) noexcept nogil

cdef int nthreads_for(int64_t work) noexcept nogil
cdef bint grad_on() noexcept nogil
cdef bint slow_path() noexcept
cdef object record(str name, tuple inputs, object out, object attrs)
cdef object finish_out(TensorBase t, object out, bint requires_grad, str op=*,
                       object inputs=*)
cdef object redispatch(str name, object fn, tuple args, dict kwargs)
cdef object factory_slow(str name, object fn, tuple args, dict kwargs, Device dev)
cdef int check_same_device(TensorBase a, TensorBase b, str op, str argname) except -1
cdef void bump_version(TensorBase t) noexcept
cdef int check_inplace(TensorBase t, str op) except -1
cdef int view_written(TensorBase t) except -1

# Written-to tensors (out= and in-place): castability and memory overlap, as torch checks.
cdef enum:
    OUT_CAST = 0       # out's dtype: any the result can be cast to (torch's canCast)
    OUT_EXACT = 1      # out's dtype must be the result's
    OUT_NOALIAS = 2    # flag: out may not share memory with an input at all
    OVERLAP_NO = 0
    OVERLAP_FULL = 1
    OVERLAP_PARTIAL = 2
    OVERLAP_TOO_HARD = 3

cdef bint castable(int src, int dst) noexcept
cdef int check_cast(int src, int dst, str op) except -1
cdef int check_out_dtype(int result, int dst, int policy, str op) except -1
cdef bint dense_nonoverlap(TensorBase t) noexcept nogil
cdef int overlap_status(TensorBase a, TensorBase b) noexcept
cdef int check_no_internal_overlap(TensorBase t, str op) except -1
cdef int check_written(TensorBase t, object inputs, str op, bint noalias=*) except -1
cdef TensorBase check_out(object out, TensorBase like, int policy, object inputs, str op)
cdef object write_out(object out, TensorBase r, int policy, object inputs, str op)
