/* A stand-in for libcupti.so.12 (and, built a second time, libnvperf_host.so), written for gpumodel's tests:
 * no GPU on CI machines, and the real CUPTI needs the real driver underneath it. It exports every CUPTI
 * function gpumodel calls (REQUIRED_CUPTI_SYMBOLS in collect/src/cupti/loader.rs) with the parameter
 * structures of cupti_profiler_host.h, cupti_pmsampling.h and cupti_range_profiler.h (CUPTI 12.9), and
 * answers as one GA102 would:
 *   -DCUPTI_API=<n>  what cuptiGetVersion reports (default 28, CUDA 12.9 Update 1)
 *   -DSCENARIO=0     profiling allowed: PM sampling yields two samples, the Range Profiler one range
 *   -DSCENARIO=1     counters restricted to admin users: cuptiPmSamplingEnable and cuptiRangeProfilerEnable
 *                    answer CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (ERR_NVGPUCTRPERM)
 * Every parameter structure starts with structSize and pPriv; only the fields written are spelled out. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#ifndef SCENARIO
#define SCENARIO 0
#endif
#ifndef CUPTI_API
#define CUPTI_API 28
#endif

typedef int CUptiResult;
#define CUPTI_SUCCESS 0
#define CUPTI_ERROR_INSUFFICIENT_PRIVILEGES 35
#define HEAD size_t structSize; void *pPriv;

static int object_token;

CUptiResult cuptiGetVersion(uint32_t *v) { *v = CUPTI_API; return CUPTI_SUCCESS; }
CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
    *s = r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" : (r ? "CUPTI_ERROR_FAKE" : "CUPTI_SUCCESS");
    return CUPTI_SUCCESS;
}
CUptiResult cuptiGetTimestamp(uint64_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return CUPTI_SUCCESS;
}

typedef struct { HEAD size_t deviceIndex; const char *pChipName; } chip_name_t;
CUptiResult cuptiDeviceGetChipName(chip_name_t *p) { p->pChipName = "GA102"; return CUPTI_SUCCESS; }
CUptiResult cuptiGetDeviceId(void *ctx, uint32_t *d) { (void)ctx; *d = 0; return CUPTI_SUCCESS; }

#define OK_STUB(name) CUptiResult name(void *p) { (void)p; return CUPTI_SUCCESS; }
CUptiResult cuptiSubscribe(void *s, void *cb, void *u) { (void)s; (void)cb; (void)u; return CUPTI_SUCCESS; }
CUptiResult cuptiUnsubscribe(void *s) { (void)s; return CUPTI_SUCCESS; }
CUptiResult cuptiEnableCallback(uint32_t e, void *s, int d, int c) { (void)e; (void)s; (void)d; (void)c; return CUPTI_SUCCESS; }
OK_STUB(cuptiProfilerInitialize)
OK_STUB(cuptiProfilerDeInitialize)

/* Counter availability (both profilers): 16 bytes. */
typedef struct { HEAD void *ctx_or_device; size_t size; uint8_t *image; } availability_t;
static CUptiResult availability(availability_t *p) {
    if (p->image) memset(p->image, 0xa5, p->size); else p->size = 16;
    return CUPTI_SUCCESS;
}
CUptiResult cuptiProfilerGetCounterAvailability(availability_t *p) { return availability(p); }
CUptiResult cuptiPmSamplingGetCounterAvailability(availability_t *p) { return availability(p); }

/* Host API. */
typedef struct { HEAD int profilerType; const char *pChipName; const uint8_t *avail; void *pHostObject; } host_init_t;
CUptiResult cuptiProfilerHostInitialize(host_init_t *p) { p->pHostObject = &object_token; return CUPTI_SUCCESS; }
OK_STUB(cuptiProfilerHostDeinitialize)
typedef struct { HEAD size_t numChips; const char *const *names; } chips_t;
static const char *const chips[] = {"TU102", "GA100", "GA102", "AD102", "GH100"};
CUptiResult cuptiProfilerHostGetSupportedChips(chips_t *p) { p->numChips = 5; p->names = chips; return CUPTI_SUCCESS; }
OK_STUB(cuptiProfilerHostGetBaseMetrics)
OK_STUB(cuptiProfilerHostConfigAddMetrics)
typedef struct { HEAD void *host; size_t size; } image_size_t;
CUptiResult cuptiProfilerHostGetConfigImageSize(image_size_t *p) { p->size = 32; return CUPTI_SUCCESS; }
OK_STUB(cuptiProfilerHostGetConfigImage)
typedef struct { HEAD size_t size; uint8_t *image; size_t numOfPasses; } passes_t;
CUptiResult cuptiProfilerHostGetNumOfPasses(passes_t *p) { p->numOfPasses = 1; return CUPTI_SUCCESS; }
typedef struct { HEAD void *host; const uint8_t *image; size_t size; size_t index; const char **names; size_t n; double *values; } evaluate_t;
CUptiResult cuptiProfilerHostEvaluateToGpuValues(evaluate_t *p) {
    for (size_t i = 0; i < p->n; i++) p->values[i] = 1.0e6 * (double)(p->index + 1);
    return CUPTI_SUCCESS;
}
OK_STUB(cuptiProfilerHostGetRangeName)

/* PM sampling. */
typedef struct { HEAD size_t deviceIndex; void *object; } pm_enable_t;
CUptiResult cuptiPmSamplingEnable(pm_enable_t *p) {
    if (SCENARIO == 1) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
    p->object = &object_token;
    return CUPTI_SUCCESS;
}
OK_STUB(cuptiPmSamplingDisable)
OK_STUB(cuptiPmSamplingSetConfig)
static uint64_t started_ns;
CUptiResult cuptiPmSamplingStart(void *p) { (void)p; return cuptiGetTimestamp(&started_ns); }
OK_STUB(cuptiPmSamplingStop)
OK_STUB(cuptiPmSamplingDecodeData)
typedef struct { HEAD void *object; const char **names; size_t n; uint32_t maxSamples; size_t size; } pm_size_t;
CUptiResult cuptiPmSamplingGetCounterDataSize(pm_size_t *p) { p->size = 256; return CUPTI_SUCCESS; }
OK_STUB(cuptiPmSamplingCounterDataImageInitialize)
typedef struct { HEAD const uint8_t *image; size_t size; size_t total, populated, completed; } pm_info_t;
CUptiResult cuptiPmSamplingGetCounterDataInfo(pm_info_t *p) {
    p->total = 1024; p->populated = 2; p->completed = 2;
    return CUPTI_SUCCESS;
}
typedef struct { HEAD void *object; const uint8_t *image; size_t size; size_t index; uint64_t start, end; } pm_sample_t;
CUptiResult cuptiPmSamplingCounterDataGetSampleInfo(pm_sample_t *p) {
    p->start = started_ns + p->index * 10000000ull; /* 10 ms samples */
    p->end = p->start + 10000000ull;
    return CUPTI_SUCCESS;
}

/* Range Profiler. */
typedef struct { HEAD void *ctx; void *object; } range_enable_t;
CUptiResult cuptiRangeProfilerEnable(range_enable_t *p) {
    if (SCENARIO == 1) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
    p->object = &object_token;
    return CUPTI_SUCCESS;
}
OK_STUB(cuptiRangeProfilerDisable)
OK_STUB(cuptiRangeProfilerSetConfig)
OK_STUB(cuptiRangeProfilerStart)
OK_STUB(cuptiRangeProfilerStop)
OK_STUB(cuptiRangeProfilerDecodeData)
typedef struct { HEAD void *object; const char **names; size_t n; size_t maxRanges; uint32_t maxNodes; size_t size; } range_size_t;
CUptiResult cuptiRangeProfilerGetCounterDataSize(range_size_t *p) { p->size = 256; return CUPTI_SUCCESS; }
OK_STUB(cuptiRangeProfilerCounterDataImageInitialize)
typedef struct { HEAD const uint8_t *image; size_t size; size_t numTotalRanges; } range_info_t;
CUptiResult cuptiRangeProfilerGetCounterDataInfo(range_info_t *p) { p->numTotalRanges = 1; return CUPTI_SUCCESS; }
