//pass
//--blockDim=64 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/ternarytest/kernel.cu

extern "C" __global__ void ternary_index(float* A) {
  A[threadIdx.x == 0 ? 1 : 2*threadIdx.x] = 2.4f;
}
