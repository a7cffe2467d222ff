/* A stand-in for libcupti.so.12 (and, built a second time, libnvperf_host.so), written for gpumodel's tests:
 * no GPU on CI machines, and the real CUPTI needs the real driver underneath it. It exports every CUPTI
 * function gpumodel calls (REQUIRED_CUPTI_SYMBOLS in collect/src/cupti/loader.rs) with the parameter
 * structures of cupti_profiler_host.h, cupti_pmsampling.h and cupti_range_profiler.h (CUPTI 12.9), and
 * answers as one GA102 would:
 *   -DCUPTI_API=<n>  what cuptiGetVersion reports (default 28, CUDA 12.9 Update 1)
 *   -DSCENARIO=0     profiling allowed: PM sampling yields two samples (or, with FAKE_CUPTI_CONTINUOUS set in
 *                    the environment, one every 10 ms since the start), the Range Profiler one range
 *   -DSCENARIO=1     counters restricted to admin users: cuptiPmSamplingEnable and cuptiRangeProfilerEnable
 *                    answer CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (ERR_NVGPUCTRPERM)
 * Its metric database holds the counters behind DCGM's profiling fields (collect/src/cupti/dcgm.rs), with
 * the passes GA102's own library plans for them: no FP16 pipe counter, the FP64 pipe counter needs 3
 * hardware passes, and one pass holds up to 13 metrics (so the fields split after DRAMA, FP32A in a run of
 * its own). Evaluated per sample, each field's counter is a fixed fraction of its peak over
 * 1e7 elapsed cycles (FIELD_FRACTIONS below); every other metric reads 1e6 × (sample index + 1).
 * Every parameter structure starts with structSize and pPriv; only the fields written are spelled out. */
#include <stddef.h>
#include <stdlib.h>
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
#define CUPTI_ERROR_UNKNOWN 999
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
/* A host object counts the metrics of its configuration and whether the FP64 pipe counter is among them;
 * the config image carries both in its first bytes, which cuptiProfilerHostGetNumOfPasses reads. */
#define METRICS_PER_PASS 13
typedef struct { int fp64; size_t metrics; } host_object_t;
typedef struct { HEAD int profilerType; const char *pChipName; const uint8_t *avail; host_object_t *pHostObject; } host_init_t;
CUptiResult cuptiProfilerHostInitialize(host_init_t *p) {
    p->pHostObject = calloc(1, sizeof(host_object_t));
    return p->pHostObject ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
}
typedef struct { HEAD host_object_t *pHostObject; } host_deinit_t;
CUptiResult cuptiProfilerHostDeinitialize(host_deinit_t *p) { free(p->pHostObject); return CUPTI_SUCCESS; }
typedef struct { HEAD size_t numChips; const char *const *names; } chips_t;
static const char *const chips[] = {"TU102", "GA100", "GA102", "AD102", "GH100"};
CUptiResult cuptiProfilerHostGetSupportedChips(chips_t *p) { p->numChips = 5; p->names = chips; return CUPTI_SUCCESS; }

/* Base metrics by CUpti_MetricType (0 counter, 1 ratio, 2 throughput); the names stay owned by the library. */
#define METRIC_TYPE_COUNTER 0
static const char *const counters[] = {
    "dram__cycles_active", "dram__cycles_elapsed", "gr__cycles_active", "gr__cycles_elapsed",
    "sm__cycles_active", "sm__cycles_elapsed", "sm__pipe_fma_cycles_active", "sm__pipe_fp64_cycles_active",
    "sm__pipe_tensor_cycles_active", "sm__warps_active",
};
typedef struct { HEAD host_object_t *pHostObject; int metricType; const char **ppMetricNames; size_t numMetrics; } base_metrics_t;
CUptiResult cuptiProfilerHostGetBaseMetrics(base_metrics_t *p) {
    int counter = p->metricType == METRIC_TYPE_COUNTER;
    p->ppMetricNames = counter ? (const char **)counters : NULL;
    p->numMetrics = counter ? sizeof counters / sizeof counters[0] : 0;
    return CUPTI_SUCCESS;
}
typedef struct { HEAD host_object_t *pHostObject; const char **ppMetricNames; size_t numMetrics; } add_metrics_t;
CUptiResult cuptiProfilerHostConfigAddMetrics(add_metrics_t *p) {
    p->pHostObject->metrics += p->numMetrics;
    for (size_t i = 0; i < p->numMetrics; i++)
        if (strncmp(p->ppMetricNames[i], "sm__pipe_fp64_cycles_active.", 28) == 0) p->pHostObject->fp64 = 1;
    return CUPTI_SUCCESS;
}
typedef struct { HEAD void *host; size_t size; } image_size_t;
CUptiResult cuptiProfilerHostGetConfigImageSize(image_size_t *p) { p->size = 32; return CUPTI_SUCCESS; }
typedef struct { HEAD host_object_t *pHostObject; size_t size; uint8_t *image; } config_image_t;
CUptiResult cuptiProfilerHostGetConfigImage(config_image_t *p) {
    memset(p->image, 0, p->size);
    p->image[0] = (uint8_t)p->pHostObject->fp64;
    p->image[1] = (uint8_t)(p->pHostObject->metrics > 255 ? 255 : p->pHostObject->metrics);
    return CUPTI_SUCCESS;
}
typedef struct { HEAD size_t size; uint8_t *image; size_t numOfPasses; } passes_t;
CUptiResult cuptiProfilerHostGetNumOfPasses(passes_t *p) {
    p->numOfPasses = p->image[0] ? 3 : (p->image[1] + METRICS_PER_PASS - 1) / METRICS_PER_PASS;
    if (p->numOfPasses == 0) p->numOfPasses = 1;
    return CUPTI_SUCCESS;
}

/* Per sample: each field's counter at a fraction of its peak (per cycle: 48 warps an SM, 1 for the others)
 * over ELAPSED cycles, so a field reads its fraction: GRACT 0.9, SMACT 0.8, SMOCC 0.4, TENSO 0.1,
 * DRAMA 0.3, FP32A 0.5, FP64A 0.05. */
#define ELAPSED 1.0e7
static const struct { const char *counter; double peak, fraction; } FIELD_FRACTIONS[] = {
    {"gr__cycles_active", 1, 0.9}, {"sm__cycles_active", 1, 0.8}, {"sm__warps_active", 48, 0.4},
    {"sm__pipe_tensor_cycles_active", 1, 0.1}, {"dram__cycles_active", 1, 0.3},
    {"sm__pipe_fma_cycles_active", 1, 0.5}, {"sm__pipe_fp64_cycles_active", 1, 0.05},
};
static double metric_value(const char *name, size_t index) {
    static const char elapsed[] = "__cycles_elapsed.avg";
    size_t len = strlen(name), e = sizeof elapsed - 1;
    if (len > e && strcmp(name + len - e, elapsed) == 0) return ELAPSED;
    for (size_t k = 0; k < sizeof FIELD_FRACTIONS / sizeof FIELD_FRACTIONS[0]; k++) {
        size_t c = strlen(FIELD_FRACTIONS[k].counter);
        if (strncmp(name, FIELD_FRACTIONS[k].counter, c) != 0) continue;
        if (strcmp(name + c, ".avg.peak_sustained") == 0) return FIELD_FRACTIONS[k].peak;
        if (strcmp(name + c, ".avg") == 0) return FIELD_FRACTIONS[k].fraction * FIELD_FRACTIONS[k].peak * ELAPSED;
    }
    return 1.0e6 * (double)(index + 1);
}
typedef struct { HEAD void *host; const uint8_t *image; size_t size; size_t index; const char **names; size_t n; double *values; } evaluate_t;
CUptiResult cuptiProfilerHostEvaluateToGpuValues(evaluate_t *p) {
    for (size_t i = 0; i < p->n; i++) p->values[i] = metric_value(p->names[i], p->index);
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
/* Two samples; with FAKE_CUPTI_CONTINUOUS set in the environment, as the hardware does, one every 10 ms
 * since the start (at least two), so that samples cover a program however late a busy host starts it. */
CUptiResult cuptiPmSamplingGetCounterDataInfo(pm_info_t *p) {
    size_t n = 2;
    if (getenv("FAKE_CUPTI_CONTINUOUS")) {
        uint64_t now;
        cuptiGetTimestamp(&now);
        n = (size_t)((now - started_ns) / 10000000ull);
        if (n < 2) n = 2;
        if (n > 1024) n = 1024;
    }
    p->total = 1024; p->populated = n; p->completed = n;
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
