//pass
//--blockDim=512 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/misc/pass/misc2/kernel.cu

// GPUVerify's __assert(__no_read(p)) is left out.
extern "C" __global__ void volatile_store(volatile int* p)
{
    p[threadIdx.x] = threadIdx.x;
}
