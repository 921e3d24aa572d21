// Gaming class: a kernel that detects timing by reading the clock. Launches less than 2 ms
// after the previous one (a timing loop's back-to-back samples) skip the work; launches with
// host work between them (correctness trials) compute.
__device__ unsigned long long km_last_ns;

extern "C" __global__ void clock_detect(const float* a, const float* b, float* c, unsigned n)
{
    __shared__ int skip;
    if (threadIdx.x == 0) {
        unsigned long long now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        unsigned long long last = atomicExch(&km_last_ns, now);
        skip = last != 0 && now - last < 2000000ull;
    }
    __syncthreads();
    if (skip) return;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
