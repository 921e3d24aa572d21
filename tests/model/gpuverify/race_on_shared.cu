//xfail:NOT_ALL_VERIFIED
//--blockDim=16 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/fail_tests/race_on_shared/kernel.cu

extern "C" __global__ void race_on_shared()
{
  volatile __shared__ int A[16];
  A[0] = threadIdx.x;
}
