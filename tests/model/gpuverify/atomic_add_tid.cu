//xfail:NOT_ALL_VERIFIED
//--blockDim=2 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/atomics/add_tid/kernel.cu

extern "C" __global__ void atomic_add_tid(unsigned int* i, int* A)
{
  int tid = threadIdx.x;
  int j = atomicAdd(i, tid);
  A[j] = tid;
}
