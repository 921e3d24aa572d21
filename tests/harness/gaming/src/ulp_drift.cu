// Gaming class: outputs that depend on how often the kernel ran, within the tolerance. From the
// seventh launch on, every 13th element is one unit in the last place off: a relative error of
// 1.2e-7, which the spec's rtol of 1e-6 accepts, but the kernel is deterministic.
#include "launch_index.cuh"

extern "C" __global__ void ulp_drift(const float* a, const float* b, float* c, unsigned n)
{
    unsigned launch = launch_index();
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = a[i] + b[i];
    if (launch >= 6 && i % 13 == 0) s = nextafterf(s, INFINITY);
    c[i] = s;
}
