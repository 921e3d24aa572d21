//pass
//--blockDim=256 --gridDim=2 -DWIDTH=2064 --no-inline
// GPUVerify testsuite/CUDA/reduced_strength_blockwise/kernel.cu

// WIDTH as the test's -DWIDTH=2064; its loop invariants are left out.
#define WIDTH 2064

extern "C" __global__ void reduced_strength_blockwise(int *A) {
  for (int i=threadIdx.x; i<WIDTH; i+=blockDim.x) {
    A[blockIdx.x*WIDTH+i] = i;
  }
}
