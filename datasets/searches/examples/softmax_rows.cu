// Row softmax in fp32 with the row held in registers: one block of BLOCK threads per row, each
// thread keeping ITEMS elements of the row (columns tid, tid + BLOCK, ...), so a row of up to
// BLOCK * ITEMS columns is read from memory once and written once. Longer rows still work: the
// columns past BLOCK * ITEMS are read again from memory in each pass.
// BLOCK and ITEMS come from the spec (-DBLOCK=256 -DITEMS=8): softmax_rows.toml searches them.

#ifndef BLOCK
#error "BLOCK, the threads per block, comes from the spec: -DBLOCK=256"
#endif
#ifndef ITEMS
#error "ITEMS, the columns each thread keeps in registers, comes from the spec: -DITEMS=8"
#endif
#if BLOCK % 32 != 0 || BLOCK > 1024
#error "BLOCK must be a multiple of 32, at most 1024"
#endif

constexpr int WARPS = BLOCK / 32;
// -infinity without <math.h>'s INFINITY, which runtime compilers (NVRTC) do not define.
#define NEG_INF __int_as_float(0xff800000u)

__device__ float warp_max(float v) {
    for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, lane_mask));
    return v;
}

__device__ float warp_sum(float v) {
    for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, lane_mask);
    return v;
}

// The block's maximum (or sum) of v, in every thread: one partial per warp in scratch, then
// every warp reduces the partials itself.
__device__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x % 32;
    v = warp_max(v);
    if (lane == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_max(lane < WARPS ? scratch[lane] : NEG_INF);
    __syncthreads();  // the next reduction writes scratch again
    return v;
}

__device__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % 32;
    v = warp_sum(v);
    if (lane == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_sum(lane < WARPS ? scratch[lane] : 0.0f);
    __syncthreads();
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, unsigned cols) {
    __shared__ float scratch[WARPS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    constexpr unsigned HELD = (unsigned)BLOCK * ITEMS;

    float v[ITEMS];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned c = threadIdx.x + k * BLOCK;
        v[k] = c < cols ? row[c] : NEG_INF;
        m = fmaxf(m, v[k]);
    }
    for (unsigned c = HELD + threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
    m = block_max(m, scratch);

    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        v[k] = threadIdx.x + k * BLOCK < cols ? expf(v[k] - m) : 0.0f;
        s += v[k];
    }
    for (unsigned c = HELD + threadIdx.x; c < cols; c += BLOCK) s += expf(row[c] - m);
    s = block_sum(s, scratch);

    const float inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned c = threadIdx.x + k * BLOCK;
        if (c < cols) out[c] = v[k] * inv;
    }
    for (unsigned c = HELD + threadIdx.x; c < cols; c += BLOCK) out[c] = expf(row[c] - m) * inv;
}
