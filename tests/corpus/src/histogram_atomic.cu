// corpus-flags: -lineinfo
// 256-bin byte histogram: privatised per block in shared memory with shared atomics, merged
// into the global histogram with global atomics. A second kernel skips the privatisation.

#define BINS 256

extern "C" __global__ void histogram_shared(const unsigned char* __restrict__ data, unsigned* hist,
                                            long long n)
{
    __shared__ unsigned local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();

    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();

    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned c = local[b];
        if (c) atomicAdd(&hist[b], c);
    }
}

extern "C" __global__ void histogram_global(const int* __restrict__ keys, int* hist, int nbins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int k = keys[i];
        k = k < 0 ? 0 : (k >= nbins ? nbins - 1 : k);
        atomicAdd(&hist[k], 1);
    }
}

// Also exercise atomicMax/atomicCAS so the corpus has atom.max and atom.cas.
extern "C" __global__ void max_and_claim(const int* __restrict__ v, int* vmax, int* owner, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMax(vmax, v[i]);
        atomicCAS(owner, -1, i);
    }
}
