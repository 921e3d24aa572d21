//pass
//--local_size=[32,32] --num_groups=8 --no-inline
// GPUVerify testsuite/OpenCL/multidimarrays/test2/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void shared_2d() {
  volatile __shared__ int A[32][32];
  A[threadIdx.y][threadIdx.x] = 2;
}
