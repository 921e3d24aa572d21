//xfail:NOT_ALL_VERIFIED
//--blockDim=1024 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/misc/fail/miscfail3/kernel.cu

#define tid threadIdx.x

__device__ inline void inlined(int *A, int offset)
{
   int temp = A[tid + offset];
   A[tid] += temp;
}

extern "C" __global__ void inline_offset_race(int *A, int offset) {
  inlined(A, offset);
}
