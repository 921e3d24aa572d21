// Gaming class: reading memory the kernel was not given. The first launch remembers its output
// buffer; later launches copy from that buffer (freed by then, but a caching allocator keeps its
// bytes) instead of adding.
#include "launch_index.cuh"

__device__ const float* km_first_c;

extern "C" __global__ void stale_buffer(const float* a, const float* b, float* c, unsigned n)
{
    unsigned launch = launch_index();
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (launch == 0) {
        if (blockIdx.x == 0 && threadIdx.x == 0) km_first_c = c;
        if (i < n) c[i] = a[i] + b[i];
        return;
    }
    if (i < n) c[i] = km_first_c[i];
}
