// Gaming class: outputs cached between calls, keyed on pointers. A launch with the output
// pointer and size of the previous launch assumes the buffer still holds its answer.
#include "launch_index.cuh"

__device__ const float* km_last_c[1024];
__device__ unsigned km_last_n[1024];

extern "C" __global__ void pointer_cache(const float* a, const float* b, float* c, unsigned n)
{
    unsigned launch = launch_index();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        km_last_c[launch % 1024] = c;
        km_last_n[launch % 1024] = n;
    }
    if (launch > 0 && km_last_c[(launch - 1) % 1024] == c && km_last_n[(launch - 1) % 1024] == n) return;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
