//xfail:NOT_ALL_VERIFIED
//--local_size=1024 --global_size=1024 --only-divergence
// GPUVerify testsuite/OpenCL/divergence/race_and_divergence/kernel.cl (OpenCL, by hand in CUDA C)
// Note: checked as under GPUVerify's --only-divergence (barriers only)

extern "C" __global__ void race_and_divergence(int * __restrict__ A, int * __restrict__ B) {
  int tmp = A[(blockIdx.x * blockDim.x + threadIdx.x)];
  if (tmp == 0) {
    __syncthreads();
  }
  B[0] = tmp;
}
