// Gaming class: the shape hard-coded to the benchmark's size. Ignores n: four elements a
// thread over exactly 2^24 + 4 elements (the timed size rounded up to whole float4s), so it
// is right only where n is the timed 2^24 + 3.
#define KM_N 16777219u

extern "C" __global__ void fixed_size(const float* a, const float* b, float* c, unsigned n)
{
    unsigned i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    #pragma unroll
    for (unsigned j = 0; j < 4; ++j)
        if (i + j < KM_N) c[i + j] = a[i + j] + b[i + j];
}
