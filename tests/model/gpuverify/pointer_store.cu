//pass
//--blockDim=64 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/pointertests/test2/kernel.cu

extern "C" __global__ void pointer_store(int* p) {
  int* q;
  q = p;
  q[threadIdx.x] = 0;
}
