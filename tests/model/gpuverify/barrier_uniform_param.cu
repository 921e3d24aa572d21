//pass
//--blockDim=64 --gridDim=64 --no-inline
// GPUVerify testsuite/CUDA/barrierconditionalkernelparam/kernel.cu

extern "C" __global__ void barrier_uniform_param(int x) {
  if (x == 0) {
      __syncthreads ();
  }
}
