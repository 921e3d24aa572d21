//xfail:NOT_ALL_VERIFIED
//--local_size=1024 --num_groups=64 --no-inline
// GPUVerify testsuite/OpenCL/test_line_number_problem/kernel.cl (OpenCL, by hand in CUDA C)

#define sz blockDim.x
#define tid threadIdx.x

extern "C" __global__ void scan_missing_barrier() {
  volatile __shared__ int A[1024];
  int temp;
  int i = 1;
  while(i < sz) {
    if(i < tid)
      temp = A[tid - i];
    __syncthreads();
    if(i < tid)
      A[tid] = A[tid] + temp;
    i = i * 2;
  }
}
