//pass
//--blockDim=64 --gridDim=16 -DWIDTH=256 --no-inline
// GPUVerify testsuite/CUDA/ctimesgid/kernel.cu

#define WIDTH 256

extern "C" __global__ void ctimesgid(unsigned int *A) {
  unsigned gid = threadIdx.x + (blockIdx.x * blockDim.x);
  for (unsigned int i=0; i<WIDTH; i++) {
    A[i+gid*WIDTH] = gid;
  }
}
