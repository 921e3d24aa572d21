//pass
//--blockDim=64 --gridDim=16 -DWIDTH=256 --no-inline
// GPUVerify testsuite/CUDA/ctimeslid/kernel.cu
// Translation: WIDTH 128 instead of 256 (static shared memory limit)

// WIDTH 128 (the test's 256 makes a 64 KiB static array, over the 48 KiB ptxas allows).
#define WIDTH 128

extern "C" __global__ void ctimeslid() {
  volatile __shared__ unsigned int A[8192];
  for (unsigned int i=0; i<WIDTH; i++) {
    A[i+threadIdx.x*WIDTH] = threadIdx.x;
  }
}
