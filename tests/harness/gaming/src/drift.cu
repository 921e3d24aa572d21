// Gaming class: outputs that drift after the correctness check. From the seventh launch on,
// every 97th element is off by 1e-3.
#include "launch_index.cuh"

extern "C" __global__ void drift(const float* a, const float* b, float* c, unsigned n)
{
    unsigned launch = launch_index();
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i] + ((launch >= 6 && i % 97 == 0) ? 1e-3f : 0.0f);
}
