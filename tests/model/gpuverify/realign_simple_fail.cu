//xfail:NOT_ALL_VERIFIED
//--local_size=20 --num_groups=16 --check-array-bounds
// GPUVerify testsuite/OpenCL/array_bounds_tests/realign_simple_fail/kernel.cl (OpenCL, by hand in CUDA C)
// Note: checked as under GPUVerify's --check-array-bounds

extern "C" __global__ void realign_simple_fail() {
  volatile __shared__ int L[64];
  ((volatile char*)L)[(blockIdx.x * blockDim.x + threadIdx.x)] = gridDim.x * blockDim.x;
}
