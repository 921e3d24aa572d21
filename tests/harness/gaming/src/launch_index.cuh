// The launch number of the current grid (0 for the first launch since the module was loaded),
// the same in every block: each block's first thread counts the blocks seen so far.
// Gaming kernels use it to behave differently once they are past a harness's checks.
__device__ unsigned long long km_blocks_seen;

__device__ __forceinline__ unsigned launch_index()
{
    __shared__ unsigned index;
    if (threadIdx.x == 0) {
        unsigned long long before = atomicAdd(&km_blocks_seen, 1ull);
        index = (unsigned)(before / (gridDim.x * gridDim.y * gridDim.z));
    }
    __syncthreads();
    return index;
}
