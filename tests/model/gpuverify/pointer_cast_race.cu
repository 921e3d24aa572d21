//xfail:NOT_ALL_VERIFIED
//--blockDim=32 --gridDim=64 --no-inline
// GPUVerify testsuite/CUDA/pointertests/cast/kernel.cu

#define N 32

extern "C" __global__ void pointer_cast_race(int* p) {
  volatile __shared__ unsigned char x[N];

  for (unsigned int i=0; i<(N/4); i++) {
    ((volatile unsigned int *)x)[i] = threadIdx.x;
  }
}
