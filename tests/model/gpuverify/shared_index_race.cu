//xfail:NOT_ALL_VERIFIED
//--local_size=1024 --num_groups=1 --no-inline
// GPUVerify testsuite/OpenCL/misc/fail/miscfail1/kernel.cl (OpenCL, by hand in CUDA C)

#define tid threadIdx.x

extern "C" __global__ void shared_index_race() {
  volatile __shared__ int A[1024];
  volatile __shared__ int B[1024];
  volatile __shared__ int C[1026];
  C[tid] = C[tid + 1];
  B[tid] = A[C[tid + 2]];
}
