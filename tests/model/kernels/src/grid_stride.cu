// grid_stride: y[i] = 2 * x[i] + 1 for i < n with a grid-stride loop, so any grid covers any n.
// Expected: bounds holds for every n (provable with the loop index as a free variable
// i = gid + k * stride with its range condition i < n); race and barrier hold.

extern "C" __global__ void grid_stride(const float* x, float* y, unsigned n)
{
#pragma unroll 1
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = 2.0f * x[i] + 1.0f;
}
