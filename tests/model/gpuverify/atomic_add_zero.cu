//xfail:NOT_ALL_VERIFIED
//--blockDim=2 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/atomics/add_zero/kernel.cu

extern "C" __global__ void atomic_add_zero(unsigned int* i, int* A)
{
  int tid = threadIdx.x;
  int j = atomicAdd(i, 0);
  A[j] = tid;
}
