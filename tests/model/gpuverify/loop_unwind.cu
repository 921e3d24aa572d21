//xfail:NOT_ALL_VERIFIED
//--blockDim=512 --gridDim=64 --loop-unwind=2 --no-inline
// GPUVerify testsuite/CUDA/loop_unwind/kernel.cu

extern "C" __global__ void loop_unwind(float *A)
{
    volatile __shared__ float B[256];
    for(int i = 0; i < 10; i ++) {
        B[i] = A[i];
    }
}
