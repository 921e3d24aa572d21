// Gaming class: lower precision than the reference. Rounds both inputs to bfloat16 before the
// add (what a kernel reading bf16 copies would compute); its spec states no tolerance.

__device__ __forceinline__ float to_bf16_and_back(float x)
{
    unsigned short h;
    float y;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    asm("cvt.f32.bf16 %0, %1;" : "=f"(y) : "h"(h));
    return y;
}

extern "C" __global__ void bf16_inputs(const float* a, const float* b, float* c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = to_bf16_and_back(a[i]) + to_bf16_and_back(b[i]);
}
