// unroll32: y[i] = 2 * x[i] in a grid-stride loop that nvcc unrolls 32 times (32 guarded copies
// of the body per round).  Expected: bounds, race and barrier hold.

extern "C" __global__ void unroll32(const float* x, float* y, int n)
{
#pragma unroll 32
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = 2.0f * x[i];
}
