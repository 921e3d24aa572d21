//pass
//--local_size=512 --num_groups=256 --no-inline
// GPUVerify testsuite/OpenCL/get_global_id/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void global_read_write(float* A) {
  A[(blockIdx.x * blockDim.x + threadIdx.x)] = A[(blockIdx.x * blockDim.x + threadIdx.x)] + 1.0f;
}
