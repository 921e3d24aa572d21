//pass
//--blockDim=1024 --gridDim=1024 --no-inline
// GPUVerify testsuite/CUDA/mul24/kernel.cu

extern "C" __global__ void mul24(int* A, int* B)
{
  int idxa          = __mul24(blockIdx.x, blockDim.x) + threadIdx.x;
  unsigned int idxb = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;

  A[idxa] = idxa;
  B[idxb] = idxa;
}
