// reduce_tree: out[b] = sum of x[128*b .. 128*b+127] (elements past n count as 0).
// Shared-memory tree reduction with a barrier after every step; the loop bound is
// blockDim.x, so the step count is not known at compile time and the loop stays a loop.
// Expected: bounds, race and barrier all hold.

extern "C" __global__ void reduce_tree(const int* x, int* out, unsigned n)
{
    __shared__ int s[128];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? x[i] : 0;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride)
            s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}
