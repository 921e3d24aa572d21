// Grid-stride sum with a warp-shuffle reduction; one atomicAdd per warp into the result.

__device__ __forceinline__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void reduce_warp_shuffle(const float* __restrict__ in, float* out, int n)
{
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += in[i];

    acc = warp_sum(acc);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

// Two-level variant: warp sums go through shared memory, the first warp reduces them.
extern "C" __global__ void reduce_block_shuffle(const double* __restrict__ in, double* out, int n)
{
    __shared__ double warp_partial[32];
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;

    double acc = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += in[i];
    for (int offset = 16; offset > 0; offset >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    if (lane == 0) warp_partial[warp] = acc;
    __syncthreads();

    if (warp == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? warp_partial[lane] : 0.0;
        for (int offset = 16; offset > 0; offset >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, offset);
        if (lane == 0) atomicAdd(out, acc);
    }
}
