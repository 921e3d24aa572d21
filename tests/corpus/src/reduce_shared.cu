// corpus-flags: -lineinfo
// Block-level tree reduction in shared memory: each block sums 2*blockDim.x inputs and writes
// one partial sum; a second launch (or the host) folds the partials.

template <unsigned BLOCK>
__global__ void reduce_shared(const float* __restrict__ in, float* __restrict__ partial, unsigned n)
{
    __shared__ float buf[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (2 * BLOCK) + tid;

    // First add during load halves the number of idle threads in the first tree level.
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + BLOCK < n) v += in[i + BLOCK];
    buf[tid] = v;
    __syncthreads();

    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = buf[0];
}

template __global__ void reduce_shared<256>(const float*, float*, unsigned);
template __global__ void reduce_shared<128>(const float*, float*, unsigned);
