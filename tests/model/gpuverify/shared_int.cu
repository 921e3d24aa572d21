//xfail:NOT_ALL_VERIFIED
//--blockDim=64 --gridDim=64 --no-inline
// GPUVerify testsuite/CUDA/fail_tests/shared_int/kernel.cu

extern "C" __global__ void shared_int() {
  volatile __shared__ int a;
  a = threadIdx.x;
}
