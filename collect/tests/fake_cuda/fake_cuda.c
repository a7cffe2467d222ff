/* A stand-in for libcuda.so, written for gpumodel's tests (no GPU on CI machines): the few CUDA driver API
 * functions the collector calls before a program runs (cuda.h signatures, CUDA 12), answering for one
 * device on PCI bus 0000:65:00.0 — the fake NVML's device 1, so the test sees CUDA ordinal 0 matched to
 * NVML index 1 by bus id, as on a machine where the two numberings differ. cudarc resolves each function on
 * first use; any other call would stop the test with cudarc's "Missing symbol" panic, so the test also
 * proves that no other driver call is made on this path.
 *
 * `gpumodel doctor` also asks for the driver's CUDA version (-DCUDA_VERSION=<n>, default 12090: CUDA 12.9),
 * the compute capability (8.6) and runs one kernel: module load, allocations, a launch and two events
 * (the launch does nothing; the events report 0.25 ms apart). */
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_INVALID_DEVICE 101

#ifndef CUDA_VERSION
#define CUDA_VERSION 12090
#endif

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
static CUcontext current = 0;
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return current ? CUDA_SUCCESS : 201; /* CUDA_ERROR_INVALID_CONTEXT */ }

CUresult cuDriverGetVersion(int *v) { *v = CUDA_VERSION; return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice d) {
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (attribute == 75) { *value = 8; return CUDA_SUCCESS; } /* COMPUTE_CAPABILITY_MAJOR */
    if (attribute == 76) { *value = 6; return CUDA_SUCCESS; } /* COMPUTE_CAPABILITY_MINOR */
    return CUDA_ERROR_INVALID_VALUE;
}

typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;
static int module_token, function_token, event_tokens[2];
static char device_memory[2][1 << 18];
static int allocations = 0;

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    if (!current) return 201;
    /* The image must be PTX text naming the kernel's entry. */
    if (!image || !strstr((const char *)image, ".entry fp32_fma")) return 218; /* CUDA_ERROR_INVALID_PTX */
    *m = &module_token;
    return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    if (m != &module_token || strcmp(name, "fp32_fma") != 0) return 500; /* CUDA_ERROR_NOT_FOUND */
    *f = &function_token;
    return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) { return m == &module_token ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    if (allocations >= 2 || bytes > sizeof device_memory[0]) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *p = (CUdeviceptr)(size_t)device_memory[allocations++];
    return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) { (void)p; allocations--; return CUDA_SUCCESS; }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void **params, void **extra) {
    (void)gy; (void)gz; (void)by; (void)bz; (void)shared; (void)s; (void)extra;
    if (f != &function_token || !params || gx == 0 || bx == 0) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *e, unsigned flags) {
    static int next = 0;
    (void)flags;
    *e = &event_tokens[next++ % 2];
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream s) { (void)e; (void)s; return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent e) { (void)e; return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { (void)a; (void)b; *ms = 0.25f; return CUDA_SUCCESS; }
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime(ms, a, b); }
CUresult cuEventDestroy_v2(CUevent e) { (void)e; return CUDA_SUCCESS; }
