//pass
//--blockDim=2 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/atomics/add_one/kernel.cu

extern "C" __global__ void atomic_add_one(unsigned int* i, int* A)
{
  int tid = threadIdx.x;
  int j = atomicAdd(i, 1);
  A[j] = tid;
}
