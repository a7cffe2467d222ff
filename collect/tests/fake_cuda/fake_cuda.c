/* A stand-in for libcuda.so, written for gpumodel's tests (no GPU on CI machines): the few CUDA driver API
 * functions the collector calls before a program runs (cuda.h signatures, CUDA 12), answering for one
 * device on PCI bus 0000:65:00.0 — the fake NVML's device 1, so the test sees CUDA ordinal 0 matched to
 * NVML index 1 by bus id, as on a machine where the two numberings differ. cudarc resolves each function on
 * first use; any other call would stop the test with cudarc's "Missing symbol" panic, so the test also
 * proves that no other driver call is made on this path. */
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_INVALID_DEVICE 101

static int initialized = 0;
static int primary_ctx_token = 0;

CUresult cuInit(unsigned int flags) { (void)flags; initialized = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (!initialized) return 3; /* CUDA_ERROR_NOT_INITIALIZED */
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (len < 13) return CUDA_ERROR_INVALID_VALUE;
    snprintf(bus, (size_t)len, "%s", "0000:65:00.0");
    return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult e, const char **s) { *s = e == 0 ? "no error" : "fake CUDA error"; return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult e, const char **s) { *s = e == 0 ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE"; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    *c = &primary_ctx_token;
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return cuDevicePrimaryCtxRelease(d); }
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
