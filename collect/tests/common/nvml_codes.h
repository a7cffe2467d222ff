/* NVML's return type and the return codes the stand-in libraries answer (values from nvml.h). */
#ifndef GPUMODEL_FAKE_NVML_CODES_H
#define GPUMODEL_FAKE_NVML_CODES_H

#ifndef SCENARIO
#define SCENARIO 0
#endif

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_UNKNOWN 999

#endif
