//pass
//--local_size=8 --num_groups=8 --check-array-bounds
// GPUVerify testsuite/OpenCL/array_bounds_tests/simple_array/kernel.cl (OpenCL, by hand in CUDA C)
// Note: checked as under GPUVerify's --check-array-bounds

extern "C" __global__ void simple_array() {
  volatile __shared__ int L[64];
  L[(blockIdx.x * blockDim.x + threadIdx.x)] = gridDim.x * blockDim.x;
}
