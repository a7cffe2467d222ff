// The program `scripts/gpu-check` builds with nvcc and measures: one memory-bound kernel (a STREAM triad
// over arrays much larger than L2) and one compute-bound kernel (independent FP32 FMA chains in
// registers), each launched repeatedly for a given number of seconds.
//
// Usage: kernels mem|compute|both SECONDS
//   SECONDS > 0: launch each selected kernel until that many seconds have passed (collect's runs);
//   SECONDS = 0: launch each selected kernel once (the profilers' runs: ncu, --kernel-totals).
// For each kernel it prints one line, read by gpu-check:
//   kernel NAME launches N mean_launch_s T
// where T is the mean duration of one launch from CUDA events (after one unmeasured warm-up launch).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "kernels: %s failed: %s\n", #call, cudaGetErrorString(e_));           \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

// 64 Mi floats per array, 768 MiB for the three: far beyond any L2, so every pass streams DRAM.
static const size_t N = size_t(64) << 20;
// Passes over the arrays per launch: one launch moves 64 * 768 MiB (about 10 ms at 5 TB/s).
static const int TRIAD_PASSES = 64;
// FMA steps per thread per launch: 8 chains x 2^18 steps x 2048 threads per SM (about 15 ms on an H100).
static const int FMA_STEPS = 1 << 18;

__global__ void stream_triad(float *a, const float *b, const float *c, float s, size_t n, int passes) {
    size_t stride = size_t(gridDim.x) * blockDim.x;
    for (int p = 0; p < passes; ++p) {
        for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
            a[i] = b[i] + s * c[i];
        }
        s = -s;
    }
}

__global__ void fma_chain(float *out, int steps) {
    // Eight independent chains per thread hide the FMA latency; the result is stored so the
    // compiler keeps every step.
    float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
    float x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;
    const float m = 0.999f, k = 0.001f;
    for (int i = 0; i < steps; ++i) {
        x0 = fmaf(x0, m, k); x1 = fmaf(x1, m, k); x2 = fmaf(x2, m, k); x3 = fmaf(x3, m, k);
        x4 = fmaf(x4, m, k); x5 = fmaf(x5, m, k); x6 = fmaf(x6, m, k); x7 = fmaf(x7, m, k);
    }
    out[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

// Launches `launch` repeatedly (once when seconds == 0) and prints the kernel's line.
template <typename F> static void run(const char *name, double seconds, F launch) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    if (seconds > 0) {
        launch(); // warm-up: module load, clocks ramping
        CHECK(cudaDeviceSynchronize());
    }
    double total_s = 0;
    long launches = 0;
    do {
        CHECK(cudaEventRecord(start));
        launch();
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaGetLastError());
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        total_s += ms * 1e-3;
        ++launches;
    } while (total_s < seconds);
    printf("kernel %s launches %ld mean_launch_s %.9g\n", name, launches, total_s / launches);
    fflush(stdout);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "mem") && strcmp(argv[1], "compute") && strcmp(argv[1], "both"))) {
        fprintf(stderr, "usage: kernels mem|compute|both SECONDS (0 = one launch of each)\n");
        return 1;
    }
    const char *mode = argv[1];
    double seconds = atof(argv[2]);
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    bool mem = strcmp(mode, "compute") != 0, compute = strcmp(mode, "mem") != 0;
    if (mem) {
        float *a, *b, *c;
        CHECK(cudaMalloc(&a, N * sizeof(float)));
        CHECK(cudaMalloc(&b, N * sizeof(float)));
        CHECK(cudaMalloc(&c, N * sizeof(float)));
        CHECK(cudaMemset(a, 0, N * sizeof(float)));
        CHECK(cudaMemset(b, 0, N * sizeof(float)));
        CHECK(cudaMemset(c, 0, N * sizeof(float)));
        run("stream_triad", seconds,
            [&] { stream_triad<<<sms * 8, 256>>>(a, b, c, 3.0f, N, TRIAD_PASSES); });
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
        CHECK(cudaFree(c));
    }
    if (compute) {
        int blocks = sms * 8;
        float *out;
        CHECK(cudaMalloc(&out, size_t(blocks) * 256 * sizeof(float)));
        run("fma_chain", seconds, [&] { fma_chain<<<blocks, 256>>>(out, FMA_STEPS); });
        CHECK(cudaFree(out));
    }
    return 0;
}
