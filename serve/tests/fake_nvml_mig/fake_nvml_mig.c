/* A stand-in for libnvidia-ml.so: one H100 in MIG mode, for gpumodel serve's tests (no GPU on CI machines).
 *
 * It exports the NVML functions that nvml-wrapper calls on serve's code path (serve/src/nvml.rs), with the
 * signatures, structures and constants of NVIDIA's nvml.h, and answers as such a GPU would:
 *   - MIG mode on; GPM supported (nvmlGpmQueryDeviceSupport);
 *   - three MIG devices: indices 0 and 1 are two compute instances of GPU instance 1 (3g.40gb), index 2 is
 *     GPU instance 2 (4g.40gb); index 3 answers NOT_FOUND, as an unused slot does;
 *   - processes: 4400 and 4401 in GPU instance 1, 4321 in GPU instance 2 (the parent lists all three);
 *   - GPM between two samples of an instance: SM utilization 60 % and DRAM bandwidth 10 % for instance 1,
 *     30 % and 50 % for instance 2;
 *   - the energy counter rises 50 J per reading; no instantaneous power field (nvmlDeviceGetPowerUsage).
 * If FAKE_NVML_GPM_LOG names a file, the number of GPM samples allocated and not freed is written there
 * when the library is unloaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../collect/tests/common/nvml_codes.h"

#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_GPM_METRIC_SM_UTIL 2
#define NVML_GPM_METRIC_DRAM_BW_UTIL 10
#define NVML_GPM_METRIC_MAX 210
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1

/* A device handle: the parent GPU (gi 0) or a MIG device of GPU instance `gi`. */
typedef struct { int mig; unsigned gi; const char *profile; } device_t;
typedef device_t *nvmlDevice_t;

typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;

typedef struct { unsigned gi; unsigned long long n; } sample_t;
typedef sample_t *nvmlGpmSample_t;

typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct { char *shortName; char *longName; char *unit; } metricInfo;
} nvmlGpmMetric_t;

typedef struct {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct { unsigned int version; unsigned int isSupportedDevice; } nvmlGpmSupport_t;

static device_t parent = {0, 0, ""};
static device_t migs[3] = {{1, 1, "3g.40gb"}, {1, 1, "3g.40gb"}, {1, 2, "4g.40gb"}};
static unsigned long long energy_mj = 1000000ULL;
static long outstanding = 0;

static int valid(nvmlDevice_t d) { return d == &parent || d == &migs[0] || d == &migs[1] || d == &migs[2]; }

nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlInit(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
const char *nvmlErrorString(nvmlReturn_t r) { return r == 0 ? "Success" : "Fake NVML error"; }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { *n = 1; return NVML_SUCCESS; }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    if (i != 0 || !d) return NVML_ERROR_INVALID_ARGUMENT;
    *d = &parent;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int n) {
    if (!valid(d) || !uuid) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(uuid, n, d->mig ? "MIG-0000000%u" : "GPU-11111111-2222-3333-4444-555555555555", d->gi);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int n) {
    if (!valid(d) || !name) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->mig) snprintf(name, n, "NVIDIA H100 80GB HBM3 MIG %s", d->profile);
    else snprintf(name, n, "NVIDIA H100 80GB HBM3");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, void *v) {
    (void)count; (void)v;
    return valid(d) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    if (d != &parent) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = 250000u;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    if (d != &parent) return NVML_ERROR_INVALID_ARGUMENT;
    energy_mj += 50000ULL;
    *mj = energy_mj;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    if (d != &parent) return NVML_ERROR_INVALID_ARGUMENT;
    *mhz = type == NVML_CLOCK_SM ? 1980u : (type == NVML_CLOCK_MEM ? 2619u : 0u);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    if (d != &parent) return NVML_ERROR_INVALID_ARGUMENT;
    *current = 1;
    *pending = 1;
    return NVML_SUCCESS;
}

/* Per-process utilization is not supported in MIG mode. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, void *s, unsigned int *n, unsigned long long t) {
    (void)d; (void)s; (void)n; (void)t;
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_t *p) {
    (void)d; (void)n; (void)p;
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_t *p) {
    if (!valid(d) || !n) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned pids[3], gis[3], count = 0;
    if (!d->mig || d->gi == 1) { pids[count] = 4400; gis[count++] = 1; pids[count] = 4401; gis[count++] = 1; }
    if (!d->mig || d->gi == 2) { pids[count] = 4321; gis[count++] = 2; }
    /* Both compute instances of GPU instance 1 list its processes: the reader must merge them. */
    if (*n < count || !p) { *n = count; return count ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS; }
    for (unsigned i = 0; i < count; i++) {
        memset(&p[i], 0, sizeof p[i]);
        p[i].pid = pids[i];
        p[i].gpuInstanceId = gis[i];
    }
    *n = count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *n) {
    if (d != &parent) return NVML_ERROR_INVALID_ARGUMENT;
    *n = 4;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int i, nvmlDevice_t *m) {
    if (d != &parent || !m) return NVML_ERROR_INVALID_ARGUMENT;
    if (i >= 3) return NVML_ERROR_NOT_FOUND;
    *m = &migs[i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id) {
    if (!valid(d) || !d->mig || !id) return NVML_ERROR_INVALID_ARGUMENT;
    *id = d->gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *s) {
    if (d != &parent || !s || s->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_INVALID_ARGUMENT;
    s->isSupportedDevice = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s) {
    if (!s) return NVML_ERROR_INVALID_ARGUMENT;
    *s = calloc(1, sizeof(sample_t));
    if (!*s) return NVML_ERROR_UNKNOWN;
    outstanding++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
    if (!s) return NVML_ERROR_INVALID_ARGUMENT;
    free(s);
    outstanding--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned int gi, nvmlGpmSample_t s) {
    static unsigned long long taken = 0;
    if (d != &parent || !s || (gi != 1 && gi != 2)) return NVML_ERROR_INVALID_ARGUMENT;
    s->gi = gi;
    s->n = ++taken;
    return NVML_SUCCESS;
}

static char sm_name[] = "SM_UTIL", dram_name[] = "DRAM_BW_UTIL", percent[] = "%";

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m) {
    if (!m || m->version != NVML_GPM_METRICS_GET_VERSION || !m->sample1 || !m->sample2) return NVML_ERROR_INVALID_ARGUMENT;
    if (m->sample1->gi != m->sample2->gi || m->sample1->n >= m->sample2->n) return NVML_ERROR_INVALID_ARGUMENT;
    if (m->numMetrics > NVML_GPM_METRIC_MAX) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned gi = m->sample1->gi;
    for (unsigned i = 0; i < m->numMetrics; i++) {
        nvmlGpmMetric_t *x = &m->metrics[i];
        x->nvmlReturn = NVML_SUCCESS;
        x->metricInfo.unit = percent;
        if (x->metricId == NVML_GPM_METRIC_SM_UTIL) {
            x->value = gi == 1 ? 60.0 : 30.0;
            x->metricInfo.shortName = x->metricInfo.longName = sm_name;
        } else if (x->metricId == NVML_GPM_METRIC_DRAM_BW_UTIL) {
            x->value = gi == 1 ? 10.0 : 50.0;
            x->metricInfo.shortName = x->metricInfo.longName = dram_name;
        } else {
            x->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return NVML_SUCCESS;
}

__attribute__((destructor)) static void report_outstanding(void) {
    const char *path = getenv("FAKE_NVML_GPM_LOG");
    if (!path) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "%ld\n", outstanding);
    fclose(f);
}
