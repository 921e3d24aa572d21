//pass
//--blockDim=64 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/test_for_get_group_id/kernel.cu

extern "C" __global__ void first_block_only(float* A) {
  if(blockIdx.x == 0) {
    A[threadIdx.x] = 42.f;
  }
}
