//xfail:NOT_ALL_VERIFIED
//--local_size=8 --num_groups=8 --check-array-bounds
// GPUVerify testsuite/OpenCL/array_bounds_tests/simple_array_fail_var/kernel.cl (OpenCL, by hand in CUDA C)
// Note: checked as under GPUVerify's --check-array-bounds

extern "C" __global__ void simple_array_fail_var() {
  volatile __shared__ int L[20];
  int x = (blockIdx.x * blockDim.x + threadIdx.x);
  L[x] = x * x;
}
