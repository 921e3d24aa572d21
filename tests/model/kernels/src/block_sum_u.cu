// block_sum_u: out[b] = sum of x[0..n) for every block b, one block-stride loop per thread with
// an unsigned index (for (unsigned i = tid; i < n; i += blockDim.x)), then __syncthreads() and a shared tree.
// Each thread makes its own number of loop iterations; every thread still reaches the barrier.
// Expected: bounds, race and barrier hold.

extern "C" __global__ void block_sum_u(const int* x, int* out, unsigned n)
{
    __shared__ int s[256];
    int acc = 0;
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
        acc += x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride)
            s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}
