/* A stand-in for libnvidia-ml.so for the clock-setting tests of gpumodel (collect/src/nvml.rs,
 * set_clock_pair / restore_clock_pair): the NVML clock functions nvml-wrapper calls, with nvml.h's
 * signatures and constants, and a log of every call the test reads back through fake_log(). One GPU.
 * Scenarios, chosen at build time with -DSCENARIO=<n> (one shared object per scenario):
 *   0 APPLICATIONS   application clocks settable; the current ones are the defaults (1410 / 1215 MHz)
 *   1 APPS_CHANGED   application clocks settable; someone set them to 1200 / 1215 before (not the defaults)
 *   2 LOCKED_ONLY    application clocks NOT_SUPPORTED (a GeForce board); GPU and memory locks work
 *   3 NO_PERMISSION  every setter answers NO_PERMISSION (not root)
 *   4 NO_MEM_LOCK    application clocks NOT_SUPPORTED, GPU lock works, memory lock NOT_SUPPORTED (pre-Ampere)
 *   5 STUCK_LOCK     as 4, and resetting the GPU lock fails too (NVML_ERROR_UNKNOWN)
 * The test may add its own lines to the log with fake_note() (the suite's kernel runs between the calls).
 */
#include <stdio.h>
#include <string.h>

#include "../common/nvml_codes.h"
#define NVML_CLOCK_GRAPHICS 0
#define NVML_CLOCK_MEM 2

typedef struct { int index; } device_t;
typedef device_t *nvmlDevice_t;
static device_t gpu = {0};

static char log_buf[4096];
static unsigned app_mem = SCENARIO == 1 ? 1215 : 1215, app_gr = SCENARIO == 1 ? 1200 : 1410;

static void note(const char *fmt, unsigned a, unsigned b) {
    char line[96];
    snprintf(line, sizeof line, fmt, a, b);
    strncat(log_buf, line, sizeof log_buf - strlen(log_buf) - 1);
}

/* The calls so far, one per line ("set_app 1215 960"), for the test. */
const char *fake_log(void) { return log_buf; }

/* A line of the test's own (e.g. "run fp32_fma"), so that the log shows where NVML calls fall. */
void fake_note(const char *line) {
    strncat(log_buf, line, sizeof log_buf - strlen(log_buf) - 1);
    strncat(log_buf, "\n", sizeof log_buf - strlen(log_buf) - 1);
}

nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlInit(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
const char *nvmlErrorString(nvmlReturn_t r) { return r == 0 ? "Success" : "Fake NVML error"; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { *n = 1; return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    if (i != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *d = &gpu;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t d, int type, unsigned int *mhz) {
    (void)d;
    if (SCENARIO == 2 || SCENARIO == 4 || SCENARIO == 5) return NVML_ERROR_NOT_SUPPORTED;
    *mhz = type == NVML_CLOCK_MEM ? app_mem : app_gr;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t d, int type, unsigned int *mhz) {
    (void)d;
    if (SCENARIO == 2 || SCENARIO == 4 || SCENARIO == 5) return NVML_ERROR_NOT_SUPPORTED;
    *mhz = type == NVML_CLOCK_MEM ? 1215 : 1410;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceSetApplicationsClocks(nvmlDevice_t d, unsigned int mem, unsigned int gr) {
    (void)d;
    note("set_app %u %u\n", mem, gr);
    if (SCENARIO == 3) return NVML_ERROR_NO_PERMISSION;
    if (SCENARIO == 2 || SCENARIO == 4 || SCENARIO == 5) return NVML_ERROR_NOT_SUPPORTED;
    app_mem = mem;
    app_gr = gr;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceResetApplicationsClocks(nvmlDevice_t d) {
    (void)d;
    note("reset_app\n", 0, 0);
    if (SCENARIO == 2 || SCENARIO == 4 || SCENARIO == 5) return NVML_ERROR_NOT_SUPPORTED;
    app_mem = 1215;
    app_gr = 1410;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t d, unsigned int lo, unsigned int hi) {
    (void)d;
    note("lock_gpu %u %u\n", lo, hi);
    return SCENARIO == 3 ? NVML_ERROR_NO_PERMISSION : NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t d) {
    (void)d;
    note("reset_gpu_lock\n", 0, 0);
    return SCENARIO == 5 ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceSetMemoryLockedClocks(nvmlDevice_t d, unsigned int lo, unsigned int hi) {
    (void)d;
    note("lock_mem %u %u\n", lo, hi);
    if (SCENARIO == 3) return NVML_ERROR_NO_PERMISSION;
    return SCENARIO == 4 || SCENARIO == 5 ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceResetMemoryLockedClocks(nvmlDevice_t d) {
    (void)d;
    note("reset_mem_lock\n", 0, 0);
    return SCENARIO == 4 || SCENARIO == 5 ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}
