// Row softmax in fp32: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)), one block of
// BLOCK threads per row. BLOCK comes from the spec's options (-DBLOCK=256), so a search or a
// campaign can change it without editing this file.

#ifndef BLOCK
#error "BLOCK, the threads per block, comes from the spec's options: -DBLOCK=256"
#endif
#if BLOCK % 32 != 0 || BLOCK > 1024
#error "BLOCK must be a multiple of 32, at most 1024"
#endif

constexpr int WARPS = BLOCK / 32;

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

// Every thread gets the block's maximum (or sum) of v. scratch holds one partial per warp, and
// every warp reduces all of them, so no broadcast is needed.
__device__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x % 32;
    v = warp_max(v);
    if (lane == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_max(lane < WARPS ? scratch[lane] : -INFINITY);
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

extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ y,
                                    unsigned cols) {
    __shared__ float scratch[WARPS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;

    float m = -INFINITY;
    for (unsigned c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
    m = block_max(m, scratch);

    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < cols; c += BLOCK) s += expf(row[c] - m);
    s = block_sum(s, scratch);

    const float inv = 1.0f / s;
    for (unsigned c = threadIdx.x; c < cols; c += BLOCK) out[c] = expf(row[c] - m) * inv;
}
