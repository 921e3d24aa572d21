// histogram_atomic: hist[k] += number of i < n with (x[i] & 15) == k.  Per-block bins in
// shared memory (zeroed, barrier, atomicAdd), then one global atomicAdd per bin and block.
// The bin index is masked to 0..15, so the data-dependent shared index is in bounds for
// every input.  Expected: bounds, race and barrier all hold (atomics do not race with atomics).

extern "C" __global__ void histogram_atomic(const int* x, int* hist, unsigned n)
{
    __shared__ int bins[16];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    if (tid < 16)
        bins[tid] = 0;
    __syncthreads();
    if (i < n)
        atomicAdd(&bins[x[i] & 15], 1);
    __syncthreads();
    if (tid < 16)
        atomicAdd(&hist[tid], bins[tid]);
}
