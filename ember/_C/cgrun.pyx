# cython: freethreading_compatible = False
"""Calling the kernels ``ember.compile`` generates, without ctypes.

A generated kernel is ``void kN(void **a, int nt, int64_t n0)``: ``a`` holds the
data pointers of its inputs then its outputs, ``nt`` the thread count, ``n0`` the
leading size; a kernel generated for every size (``dynamic=True``) also finds
the address of its sizes and strides (int64) after its outputs in ``a``.
:class:`Kernel` keeps one such function's address and its
outputs' shapes and dtypes; a call allocates the outputs, gathers the addresses
into an array on the C stack (so concurrent calls share nothing) and calls the
function with the GIL released.  :class:`Plan` runs a graph made only of
kernels in one call: values live in slots (the arguments first, then each
kernel's outputs) and a slot is cleared after its last reader, so dead
intermediates go back to the allocator early; :meth:`Plan.run_owned` takes its
arguments from a list it empties, so they are freed after their last reader too.
"""
from libc.stdint cimport int64_t, intptr_t
from libc.stdlib cimport free, malloc

from ember._C.core cimport MAX_DIMS, Device, TensorBase, cpu_device, dtype_code, new_tensor
from ember._C.frame cimport data_ptr, max_threads

ctypedef void (*kernel_fn)(void **a, int nt, int64_t n0) noexcept nogil

cdef enum:
    STACK_ARGS = 32     # pointer arrays up to this size live on the C stack


cdef class Kernel:
    """One generated kernel: ``Kernel(address, n_in, [(shape, dtype), ...], n0,
    sizes=None)``; ``sizes`` (ints) is passed to the code after the outputs.

    ``nt`` caps its thread count (0: ember's thread count), as max-autotune chose.
    """
    cdef kernel_fn fn
    cdef readonly int n_in
    cdef readonly int n_out
    cdef readonly int64_t n0
    cdef public int nt
    cdef int *ndims
    cdef int *dtypes
    cdef int64_t *shapes          # n_out rows of MAX_DIMS
    cdef int64_t *sizes           # the code's run-time sizes, or NULL
    cdef Device dev

    def __cinit__(self, fn_addr, int n_in, list out_specs, int64_t n0, sizes=None):
        cdef int i, d
        if not fn_addr:
            raise ValueError("cgrun.Kernel: null function address")
        self.fn = <kernel_fn><intptr_t>fn_addr
        self.n_in = n_in
        self.n_out = len(out_specs)
        self.n0 = n0
        self.nt = 0
        self.dev = cpu_device()
        self.ndims = <int *>malloc(sizeof(int) * (self.n_out + 1))
        self.dtypes = <int *>malloc(sizeof(int) * (self.n_out + 1))
        self.shapes = <int64_t *>malloc(sizeof(int64_t) * MAX_DIMS * (self.n_out + 1))
        if self.ndims is NULL or self.dtypes is NULL or self.shapes is NULL:
            raise MemoryError()
        self.sizes = NULL
        if sizes is not None:
            self.sizes = <int64_t *>malloc(sizeof(int64_t) * (len(sizes) + 1))
            if self.sizes is NULL:
                raise MemoryError()
            for i, v in enumerate(sizes):
                self.sizes[i] = v
        for i, (shape, dt) in enumerate(out_specs):
            if len(shape) > MAX_DIMS:
                raise ValueError(f"cgrun.Kernel: output {i} has more than {MAX_DIMS} dims")
            self.ndims[i] = len(shape)
            self.dtypes[i] = dtype_code(dt)
            for d in range(len(shape)):
                self.shapes[i * MAX_DIMS + d] = shape[d]

    def __dealloc__(self):
        free(self.ndims)
        free(self.dtypes)
        free(self.shapes)
        free(self.sizes)

    cdef inline int threads(self, int nt) noexcept:
        if nt <= 0:
            nt = max_threads()
        return nt if self.nt <= 0 or self.nt > nt else self.nt

    cdef list alloc(self):
        cdef int i
        return [new_tensor(self.ndims[i], self.shapes + i * MAX_DIMS, self.dtypes[i], self.dev)
                for i in range(self.n_out)]

    cdef int call(self, object ins, object outs, int nt) except -1:
        """Run on ``ins`` (a tuple or list of tensors) writing ``outs`` (a list)."""
        cdef void *stack[STACK_ARGS]
        cdef void **a = stack
        cdef int i, n = self.n_in + self.n_out + (self.sizes is not NULL)
        if len(ins) != self.n_in or len(outs) != self.n_out:
            raise ValueError(f"cgrun.Kernel: expected {self.n_in} inputs and {self.n_out} "
                             f"outputs, got {len(ins)} and {len(outs)}")
        if n > STACK_ARGS:
            a = <void **>malloc(sizeof(void *) * n)
            if a is NULL:
                raise MemoryError()
        try:
            for i in range(self.n_in):
                a[i] = data_ptr(<TensorBase?>ins[i])
            for i in range(self.n_out):
                a[self.n_in + i] = data_ptr(<TensorBase?>outs[i])
            if self.sizes is not NULL:
                a[self.n_in + self.n_out] = self.sizes
            nt = self.threads(nt)
            with nogil:
                self.fn(a, nt, self.n0)
        finally:
            if a is not stack:
                free(a)
        return 0

    def run(self, ins, int nt=0):
        """The kernel's outputs (freshly allocated) on the tensors ``ins``."""
        cdef list outs = self.alloc()
        self.call(ins, outs, nt)
        return outs

    def run_into(self, ins, list outs, int nt=0):
        """Run on ``ins`` writing the given output tensors (their shapes are trusted)."""
        self.call(ins, outs, nt)
        return outs


cdef class Plan:
    """A graph of kernels run in one call.

    ``Plan(kernels, reads, writes, frees, n_args, results, static=None,
    arg_frees=None)``: step i runs ``kernels[i]`` on the slots ``reads[i]``, storing
    its outputs in ``writes[i]``, then clears the slots ``frees[i]`` (and, in
    :meth:`run_owned`, the argument slots ``arg_frees[i]``); slots ``0 .. n_args-1``
    are the arguments and the call returns the slots ``results`` as a tuple.  With ``static`` (a list, one
    tensor per kernel output in step order) outputs are never allocated: every call
    writes the same buffers, and a call whose argument shares storage with one of
    them returns None (the caller runs it with fresh buffers).
    """
    cdef list kernels
    cdef list reads
    cdef list writes
    cdef list frees
    cdef list arg_frees
    cdef int n_args
    cdef int n_slots
    cdef tuple results
    cdef list static_vals          # the slot template in static mode
    cdef tuple static_out
    cdef list storages

    def __cinit__(self, list kernels, list reads, list writes, list frees, int n_args,
                  results, static=None, arg_frees=None):
        cdef int i
        if not (len(kernels) == len(reads) == len(writes) == len(frees)):
            raise ValueError("cgrun.Plan: one reads/writes/frees entry per kernel")
        self.kernels = kernels
        self.reads = [tuple(r) for r in reads]
        self.writes = [tuple(w) for w in writes]
        self.frees = [tuple(f) for f in frees]
        self.arg_frees = [tuple(f) for f in arg_frees] if arg_frees is not None else \
            [() for _ in frees]
        if len(self.arg_frees) != len(self.frees):
            raise ValueError("cgrun.Plan: one arg_frees entry per kernel")
        self.n_args = n_args
        self.n_slots = n_args + sum(len(w) for w in writes)
        self.results = tuple(results)
        for i, k in enumerate(kernels):
            if (<Kernel?>k).n_in != len(self.reads[i]) or \
                    (<Kernel>k).n_out != len(self.writes[i]):
                raise ValueError(f"cgrun.Plan: step {i} reads or writes the wrong count")
        self.static_vals = None
        if static is not None:
            tpl = [None] * self.n_slots
            j = 0
            for w in self.writes:
                for s in w:
                    tpl[s] = static[j]
                    j += 1
            self.static_vals = tpl
            self.static_out = tuple([tpl[s] for s in self.results])
            self.storages = [(<TensorBase?>t)._storage for t in static]

    def __call__(self, *args):
        cdef int i, j, s
        cdef Kernel k
        cdef tuple rd, wr
        cdef list slots, ins, outs
        if len(args) != self.n_args:
            raise TypeError(f"cgrun.Plan: expected {self.n_args} arguments, got {len(args)}")
        if self.static_vals is not None:
            for a in args:
                st = (<TensorBase?>a)._storage
                for b in self.storages:
                    if st is b:
                        return None
            slots = list(self.static_vals)
        else:
            slots = [None] * self.n_slots
        for i in range(self.n_args):
            slots[i] = args[i]
        for i in range(len(self.kernels)):
            k = <Kernel>self.kernels[i]
            rd = <tuple>self.reads[i]
            wr = <tuple>self.writes[i]
            ins = [slots[<int>s] for s in rd]
            if self.static_vals is not None:
                outs = [slots[<int>s] for s in wr]
            else:
                outs = k.alloc()
                for j in range(len(wr)):
                    slots[<int>wr[j]] = outs[j]
            k.call(ins, outs, 0)
            for s in <tuple>self.frees[i]:
                slots[s] = None
        if self.static_vals is not None:
            return self.static_out
        return tuple([slots[s] for s in self.results])

    def run_owned(self, list args):
        """Like a call on ``*args``, but the arguments are taken out of ``args`` (left
        empty), so each is freed after the last step that reads it."""
        cdef int i, j, s
        cdef Kernel k
        cdef tuple wr
        cdef list slots, ins, outs
        if len(args) != self.n_args:
            raise TypeError(f"cgrun.Plan: expected {self.n_args} arguments, got {len(args)}")
        if self.static_vals is not None:
            raise ValueError("cgrun.Plan.run_owned: a static plan keeps its buffers")
        slots = [None] * self.n_slots
        for i in range(self.n_args):
            slots[i] = args[i]
        del args[:]
        for i in range(len(self.kernels)):
            k = <Kernel>self.kernels[i]
            ins = [slots[<int>s] for s in <tuple>self.reads[i]]
            wr = <tuple>self.writes[i]
            outs = k.alloc()
            for j in range(len(wr)):
                slots[<int>wr[j]] = outs[j]
            k.call(ins, outs, 0)
            ins = None
            for s in <tuple>self.frees[i]:
                slots[s] = None
            for s in <tuple>self.arg_frees[i]:
                slots[s] = None
        return tuple([slots[s] for s in self.results])
