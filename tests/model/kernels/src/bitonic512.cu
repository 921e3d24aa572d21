// bitonic512: sorts each 512-int slice of data in shared memory, one element per thread
// (block 512); nvcc unrolls both loops: 45 phases, each a compare-exchange and a barrier.
// Expected: bounds, race and barrier hold.

extern "C" __global__ void bitonic512(int* data)
{
    __shared__ int s[512];
    unsigned t = threadIdx.x;
    unsigned base = blockIdx.x * 512;
    s[t] = data[base + t];
    __syncthreads();
    for (unsigned k = 2; k <= 512; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned p = t ^ j;
            if (p > t) {
                int a = s[t], b = s[p];
                if (((t & k) == 0) == (a > b)) {
                    s[t] = b;
                    s[p] = a;
                }
            }
            __syncthreads();
        }
    }
    data[base + t] = s[t];
}
