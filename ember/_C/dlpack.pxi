# DLPack ABI (v1.0), declared here so ember needs no external header.
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
