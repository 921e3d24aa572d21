// Gaming class: the answer left in the output buffer by an earlier call. Computes on even
// launches only; odd launches trust the buffer to hold the previous result.
#include "launch_index.cuh"

extern "C" __global__ void every_other(const float* a, const float* b, float* c, unsigned n)
{
    if (launch_index() % 2 == 1) return;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
