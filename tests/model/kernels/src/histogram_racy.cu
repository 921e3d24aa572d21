// histogram_racy: histogram_atomic with the shared-bin update written bins[k] += 1 (not atomic).
// Two threads with equal bins lose updates.  Global update stays atomic.
// The bin index is masked to 0..15, so bounds still hold for every input.
// Expected: race violated (shared bin load/store); bounds and barrier hold.

extern "C" __global__ void histogram_racy(const int* x, int* hist, unsigned n)
{
    __shared__ int bins[16];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    if (tid < 16)
        bins[tid] = 0;
    __syncthreads();
    if (i < n)
        bins[x[i] & 15] += 1;   // BUG: a plain read-modify-write
    __syncthreads();
    if (tid < 16)
        atomicAdd(&hist[tid], bins[tid]);
}
