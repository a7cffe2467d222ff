/* A stand-in for libnvidia-ml.so, written for gpumodel's tests (no GPU on CI machines).
 *
 * It exports the NVML functions that nvml-wrapper calls on gpumodel's code path (collect/src/nvml.rs),
 * with the signatures and constants of NVIDIA's nvml.h (NVML API 12), and answers as a GPU would in one of
 * several scenarios chosen at build time with -DSCENARIO=<n> (one shared object per scenario, so tests
 * running in parallel cannot disturb each other):
 *   0 FULL           instantaneous power field, energy counter, clocks (an Ampere-class board)
 *   1 AVERAGE_ONLY   POWER_INSTANT not supported (the field's own return code), no energy counter
 *                    (pre-Volta), memory clock not supported
 *   2 NO_PERMISSION  no instant field; nvmlDeviceGetPowerUsage answers NO_PERMISSION
 *   3 CLOCKS_FAIL    clocks answer at first, then NO_PERMISSION; energy counter NO_PERMISSION
 *   4 NO_DRIVER      nvmlInit_v2 answers DRIVER_NOT_LOADED
 *   5 NO_POWER       neither power reading is supported
 *   6 OLD_LIBRARY    exports no nvmlInit_v2 (a library older than the functions nvml-wrapper binds)
 *   7 MIG            as FULL, with MIG mode on (current and pending)
 *   8 OLD_DRIVER     as FULL on driver 550.54.15, whose CUDA version is 12.4
 * Scenario 1 also has persistence mode off. For `gpumodel doctor`, every scenario answers the driver's
 * CUDA version, MIG, virtualization and persistence modes, the power limit, the maximum, supported and
 * application clocks, and whether setting application clocks is restricted to root (it is).
 * Two devices: index 0 on bus 00000000:17:00.0, index 1 on bus 00000000:65:00.0.
 */
#include <string.h>
#include <stdio.h>

#include "../common/nvml_codes.h"

#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
#define NVML_FI_DEV_POWER_INSTANT 186

typedef struct { int index; const char *bus_id; unsigned long long energy_mj; unsigned clock_calls; } device_t;
typedef device_t *nvmlDevice_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef union {
    double dVal; int siVal; unsigned int uiVal; unsigned long ulVal; unsigned long long ullVal;
    long long sllVal; unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

static device_t devices[2] = {
    {0, "00000000:17:00.0", 1000000ULL, 0},
    {1, "00000000:65:00.0", 5000000ULL, 0},
};

static int valid(nvmlDevice_t d) { return d == &devices[0] || d == &devices[1]; }

#if SCENARIO != 6
nvmlReturn_t nvmlInit_v2(void) { return SCENARIO == 4 ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS; }
#endif
nvmlReturn_t nvmlInit(void) { return SCENARIO == 4 ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
const char *nvmlErrorString(nvmlReturn_t r) { return r == 0 ? "Success" : "Fake NVML error"; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) {
    if (!v || n < 8) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(v, n, "%s", SCENARIO == 8 ? "550.54.15" : "575.57.08");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { *n = 2; return NVML_SUCCESS; }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    if (i > 1 || !d) return NVML_ERROR_INVALID_ARGUMENT;
    *d = &devices[i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d) {
    for (int i = 0; i < 2; i++)
        if (bus && strcmp(bus, devices[i].bus_id) == 0) { *d = &devices[i]; return NVML_SUCCESS; }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *i) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    *i = d->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int n) {
    if (!valid(d) || !name) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(name, n, "Fake NVIDIA GPU %d", d->index);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    *major = 8; *minor = 6;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
    if (!valid(d) || !p) return NVML_ERROR_INVALID_ARGUMENT;
    memset(p, 0, sizeof *p);
    snprintf(p->busId, sizeof p->busId, "%s", d->bus_id);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%s", d->bus_id + 4);
    p->bus = d->index == 0 ? 0x17 : 0x65;
    p->pciDeviceId = 0x220410de;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t *v) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    if (SCENARIO == 2 || SCENARIO == 5) return NVML_ERROR_NOT_SUPPORTED; /* older driver: the call itself */
    for (int i = 0; i < count; i++) {
        if (v[i].fieldId != NVML_FI_DEV_POWER_INSTANT || SCENARIO == 1) {
            v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED; /* the field's own answer */
            continue;
        }
        v[i].nvmlReturn = NVML_SUCCESS;
        v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v[i].value.uiVal = d->index == 0 ? 123456u : 654321u; /* mW */
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    if (SCENARIO == 2) return NVML_ERROR_NO_PERMISSION;
    if (SCENARIO == 5) return NVML_ERROR_NOT_SUPPORTED;
    *mw = 100000u; /* the 1-second average */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    if (SCENARIO == 1 || SCENARIO == 5) return NVML_ERROR_NOT_SUPPORTED;
    if (SCENARIO == 3) return NVML_ERROR_NO_PERMISSION;
    d->energy_mj += 1500; /* 1.5 J per reading */
    *mj = d->energy_mj;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    if (SCENARIO == 1 && type == NVML_CLOCK_MEM) return NVML_ERROR_NOT_SUPPORTED;
    if (SCENARIO == 3 && ++d->clock_calls > 2) return NVML_ERROR_NO_PERMISSION;
    *mhz = type == NVML_CLOCK_SM ? 1410u : (type == NVML_CLOCK_MEM ? 1215u : 0u);
    return NVML_SUCCESS;
}

/* What `gpumodel doctor` asks besides. */
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = SCENARIO == 8 ? 12040 : 12090; return NVML_SUCCESS; }

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = SCENARIO == 7 ? 1u : 0u; /* NVML_DEVICE_MIG_ENABLE / DISABLE */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t d, int *mode) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = 0; /* NVML_GPU_VIRTUALIZATION_MODE_NONE */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *mode) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = SCENARIO == 1 ? 0 : 1; /* NVML_FEATURE_DISABLED / ENABLED */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = 300000u;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    *mhz = type == NVML_CLOCK_MEM ? 7251u : 1740u;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t d, int type, unsigned int *mhz) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    *mhz = type == NVML_CLOCK_MEM ? 7251u : 1410u;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t d, unsigned int *count, unsigned int *mhz) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    if (*count < 2) { *count = 2; return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */ }
    *count = 2; mhz[0] = 7251u; mhz[1] = 405u;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t d, unsigned int mem, unsigned int *count, unsigned int *mhz) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    if (mem != 7251u) return NVML_ERROR_NOT_FOUND;
    if (*count < 3) { *count = 3; return 7; }
    *count = 3; mhz[0] = 1740u; mhz[1] = 1410u; mhz[2] = 210u;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetAPIRestriction(nvmlDevice_t d, int api, int *restricted) {
    if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
    (void)api;
    *restricted = 1; /* NVML_FEATURE_ENABLED: root only */
    return NVML_SUCCESS;
}
