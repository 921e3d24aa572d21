//xfail:NOT_ALL_VERIFIED
//--local_size=2 --num_groups=5
// GPUVerify testsuite/OpenCL/report_global_id/test2/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void report_global_id(int *p, int x) {
  if((blockIdx.x * blockDim.x + threadIdx.x) == 0) {
    p[(blockIdx.x * blockDim.x + threadIdx.x)] = 0;  // get_global_id(1): 0 in a 1-D launch
  }
  if((blockIdx.x * blockDim.x + threadIdx.x) == 7) {
    p[x] = 45;
  }
}
