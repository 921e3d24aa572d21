//pass
//--blockDim=64 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/noraceduetoreturn/kernel.cu

__device__ int bar(float* A) {
  if(threadIdx.x != 0) {
    return 0;
  }
  A[4] = 26.8f;
  return 1;
}

extern "C" __global__ void noraceduetoreturn(float* A) {
  int y = bar(A);
}
