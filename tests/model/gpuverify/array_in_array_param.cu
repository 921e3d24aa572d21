//xfail:NOT_ALL_VERIFIED
//--local_size=8 --num_groups=8 --check-array-bounds
// GPUVerify testsuite/OpenCL/array_bounds_tests/array_in_array_param/kernel.cl (OpenCL, by hand in CUDA C)
// Note: checked as under GPUVerify's --check-array-bounds

extern "C" __global__ void array_in_array_param(int* G) {
  volatile __shared__ int L[64];
  L[G[(blockIdx.x * blockDim.x + threadIdx.x)]] = gridDim.x * blockDim.x;
}
