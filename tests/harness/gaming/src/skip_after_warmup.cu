// Gaming class: work skipped after a warm-up. Correct for its first four launches (a harness's
// correctness trials and warm-up), then returns at once.
#include "launch_index.cuh"

extern "C" __global__ void skip_after_warmup(const float* a, const float* b, float* c, unsigned n)
{
    if (launch_index() >= 4) return;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
