//xfail:NOT_ALL_VERIFIED
//--local_size=64 --num_groups=1 --equality-abstraction --no-inline
// GPUVerify testsuite/OpenCL/benign_race_tests/fail/writeafterread_otherval/kernel.cl (OpenCL, by hand in CUDA C)

#define tid threadIdx.x

extern "C" __global__ void writeafterread_otherval() {
  volatile __shared__ int A[64];
  volatile __shared__ int B[64];
  B[tid] = A[0];
  A[0] = 5;
}
