//pass
//--blockDim=64 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/pointertests/test13/kernel.cu

extern "C" __global__ void local_through_pointer(int* glob) {
  int a;
  int* p;
  a = 0;
  p = &a;
  *p = threadIdx.x;
  glob[*p] = threadIdx.x;
}
