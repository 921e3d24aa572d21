//xfail:NOT_ALL_VERIFIED
//--local_size=65 --num_groups=1 --no-inline
// GPUVerify testsuite/OpenCL/benign_race_tests/fail/writetiddiv64_offbyone/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void writetiddiv64_offbyone(int i) {
  volatile __shared__ int A[64];
  A[i] = threadIdx.x / 64;
}
