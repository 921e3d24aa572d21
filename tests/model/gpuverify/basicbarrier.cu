//pass
//--blockDim=64 --gridDim=64 --no-inline
// GPUVerify testsuite/CUDA/basicbarrier/kernel.cu

extern "C" __global__ void basicbarrier() {
  int a, b, c;
  a = 2;
  b = 3;
  c = a + b;
  __syncthreads ();
}
