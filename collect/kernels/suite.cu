// gpumodel microbenchmark suite: one kernel per execution pattern of Song et al. (IPDPS 2013, §5.4-B),
// each with an intensity knob. Compiled at run time by NVRTC; every kernel shares one signature so the
// launcher needs a single code path:
//   in   : n floats, read-only input          out : n floats, results (keeps the work observable)
//   tex  : a texture object over `in` (only the texture kernels read it)
//   n    : elements in `in` / `out` (a power of two)
//   iters: repetitions of the kernel's inner loop (duration)
//   knob : the pattern's intensity knob (stride, footprint, conflict ways, FMAs per load, …)
// Every kernel writes a value derived from all its work to `out`, so the compiler cannot drop the work;
// the tests check the PTX for the instructions each kernel claims.

#define SUITE_ARGS const float *__restrict__ in, float *__restrict__ out, unsigned long long tex, \
                   int n, int iters, int knob

__device__ __forceinline__ unsigned gtid() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ unsigned gthreads() { return gridDim.x * blockDim.x; }

// Global loads, L1 bypassed (ld.global.cg): knob = stride in elements between neighbouring threads.
// knob 1 is coalesced (one 128-byte line per warp); knob >= 32 gives one line per thread (uncoalesced).
extern "C" __global__ void global_load(SUITE_ARGS) {
    unsigned mask = (unsigned)n - 1u;
    unsigned idx = gtid() * (unsigned)knob;
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        acc += __ldcg(&in[idx & mask]);
        idx += gthreads() * (unsigned)knob;
    }
    out[gtid() & mask] = acc;
}

// Global stores: knob = stride in elements between neighbouring threads (1 coalesced, >= 32 uncoalesced).
extern "C" __global__ void global_store(SUITE_ARGS) {
    unsigned mask = (unsigned)n - 1u;
    unsigned idx = gtid() * (unsigned)knob;
    float v = (float)gtid();
    for (int it = 0; it < iters; ++it) {
        out[idx & mask] = v;
        v += 1.0f;
        idx += gthreads() * (unsigned)knob;
    }
}

// L1 hits: each block re-reads a footprint of knob floats (small: fits L1) with ld.global.ca.
extern "C" __global__ void l1_hit(SUITE_ARGS) {
    unsigned fmask = (unsigned)knob - 1u;
    unsigned idx = threadIdx.x;
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        acc += __ldca(&in[idx & fmask]);
        idx += 33u;
    }
    out[gtid() & ((unsigned)n - 1u)] = acc;
}

// L1 misses: the same access pattern over the whole buffer, one line per thread, cached in L2 only.
extern "C" __global__ void l1_miss(SUITE_ARGS) {
    unsigned mask = (unsigned)n - 1u;
    unsigned idx = gtid() * 32u;
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        acc += __ldcg(&in[idx & mask]);
        idx += gthreads() * 32u + (unsigned)knob;
    }
    out[gtid() & mask] = acc;
}

// Shared memory with knob-way bank conflicts (1, 2, 4, …, 32): lane l touches word l*knob, so knob lanes
// share each bank. Loads and stores (ld.shared / st.shared).
extern "C" __global__ void shared_conflict(SUITE_ARGS) {
    __shared__ float s[32 * 33];
    for (unsigned i = threadIdx.x; i < 32u * 33u; i += blockDim.x) s[i] = (float)i;
    __syncthreads();
    unsigned lane = threadIdx.x & 31u;
    unsigned base = (lane * (unsigned)knob) & 1023u;
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        unsigned i = (base + (unsigned)it * 32u) & 1023u;
        acc += s[i];
        s[(i + 32u) & 1023u] = acc;
    }
    out[gtid() & ((unsigned)n - 1u)] = acc;
}

// Texture fetches over a footprint of knob elements: a small footprint hits the texture cache, the
// whole buffer with a scattered index misses it.
extern "C" __global__ void texture_fetch(SUITE_ARGS) {
    cudaTextureObject_t t = (cudaTextureObject_t)tex;
    unsigned fmask = (unsigned)knob - 1u;
    unsigned idx = gtid() * 32u;
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        acc += tex1Dfetch<float>(t, (int)(idx & fmask));
        idx += 7919u * 32u;
    }
    out[gtid() & ((unsigned)n - 1u)] = acc;
}

// FP32 FMA: four independent chains, knob unused (intensity = iters).
extern "C" __global__ void fp32_fma(SUITE_ARGS) {
    float a = in[gtid() & ((unsigned)n - 1u)], b = a + 1.0f, c = a + 2.0f, d = a + 3.0f;
    float m = 0.9999f + 1e-7f * (float)knob;
    for (int it = 0; it < iters; ++it) {
        a = fmaf(a, m, 0.5f); b = fmaf(b, m, 0.25f); c = fmaf(c, m, 0.125f); d = fmaf(d, m, 0.0625f);
    }
    out[gtid() & ((unsigned)n - 1u)] = a + b + c + d;
}

// FP64 FMA: four independent chains.
extern "C" __global__ void fp64_fma(SUITE_ARGS) {
    double a = (double)in[gtid() & ((unsigned)n - 1u)], b = a + 1.0, c = a + 2.0, d = a + 3.0;
    double m = 0.9999 + 1e-9 * (double)knob;
    for (int it = 0; it < iters; ++it) {
        a = fma(a, m, 0.5); b = fma(b, m, 0.25); c = fma(c, m, 0.125); d = fma(d, m, 0.0625);
    }
    out[gtid() & ((unsigned)n - 1u)] = (float)(a + b + c + d);
}

// Special functions on the SFU: fast sine, reciprocal square root, base-2 exponential.
extern "C" __global__ void sfu(SUITE_ARGS) {
    float x = in[gtid() & ((unsigned)n - 1u)] + 1e-3f * (float)knob;
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        x = __sinf(x) + rsqrtf(fabsf(x) + 1.0f);
        acc += exp2f(-fabsf(x));
    }
    out[gtid() & ((unsigned)n - 1u)] = x + acc;
}

// Integer ALU: a linear congruential generator with xor-shift mixing (mad.lo, shr, xor).
extern "C" __global__ void integer(SUITE_ARGS) {
    unsigned x = gtid() + (unsigned)knob, y = x ^ 0x9e3779b9u;
    for (int it = 0; it < iters; ++it) {
        x = x * 1664525u + 1013904223u;
        y ^= x >> 13;
        y = y * 69069u + (unsigned)it;
    }
    out[gtid() & ((unsigned)n - 1u)] = (float)(x ^ y);
}

// Branch divergence: lanes take one of knob paths (1 = no divergence, 32 = every lane alone); each path
// is long enough that the compiler keeps the branch instead of predicating it.
extern "C" __global__ void branch_divergence(SUITE_ARGS) {
    unsigned lane = threadIdx.x & 31u;
    unsigned path = lane % (unsigned)knob;
    float x = in[gtid() & ((unsigned)n - 1u)];
    for (int it = 0; it < iters; ++it) {
        if (((path + (unsigned)it) & 1u) == 0u) {
            #pragma unroll 1
            for (unsigned j = 0; j <= path; ++j) x = __sinf(x) * 1.0001f + 0.5f;
        } else {
            #pragma unroll 1
            for (unsigned j = 0; j <= path; ++j) x = x * x * 0.999f - 0.25f;
        }
    }
    out[gtid() & ((unsigned)n - 1u)] = x;
}

// Local-memory spills: a per-thread array of knob (<= 64) floats indexed at run time lives in local
// memory (ld.local / st.local), as register spills do.
extern "C" __global__ void local_spill(SUITE_ARGS) {
    float buf[64];
    unsigned lmask = (unsigned)knob - 1u;
    #pragma unroll
    for (int i = 0; i < 64; ++i) buf[i] = (float)(i + gtid());
    float acc = 0.0f;
    unsigned j = gtid();
    for (int it = 0; it < iters; ++it) {
        j = j * 1103515245u + 12345u;
        acc += buf[(j >> 16) & lmask];
        buf[(j >> 8) & lmask] = acc;
    }
    out[gtid() & ((unsigned)n - 1u)] = acc + buf[j & 63u];
}

// Compute/memory mixes: knob FP32 FMAs per (coalesced, L1-bypassing) global load.
extern "C" __global__ void mix_compute_memory(SUITE_ARGS) {
    unsigned mask = (unsigned)n - 1u;
    unsigned idx = gtid();
    float acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        float v = __ldcg(&in[idx & mask]);
        #pragma unroll 1
        for (int j = 0; j < knob; ++j) v = fmaf(v, 0.9999f, 0.5f);
        acc += v;
        idx += gthreads();
    }
    out[gtid() & mask] = acc;
}

// Idle: resident warps that only sleep (knob nanoseconds per nap), for the idle/static power floor.
extern "C" __global__ void idle(SUITE_ARGS) {
    for (int it = 0; it < iters; ++it) __nanosleep((unsigned)knob);
    if (gtid() == 0) out[0] = (float)iters;
}
