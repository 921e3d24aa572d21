// reduce_shfl: the same block sum as reduce_tree, written with warp shuffles.
// Each warp sums its 32 values with __shfl_down_sync (full mask), lane 0 of each warp puts
// the warp's sum in shared memory, and after one barrier thread 0 adds the warp sums.
// Expected: bounds, race and barrier all hold; equivalent to reduce_tree (integer adds).

extern "C" __global__ void reduce_shfl(const int* x, int* out, unsigned n)
{
    __shared__ int warp_sum[4];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    int v = i < n ? x[i] : 0;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((tid & 31) == 0)
        warp_sum[tid >> 5] = v;
    __syncthreads();
    if (tid == 0)
        out[blockIdx.x] = warp_sum[0] + warp_sum[1] + warp_sum[2] + warp_sum[3];
}
