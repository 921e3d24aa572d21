//xfail:NOT_ALL_VERIFIED
//--local_size=64 --num_groups=1 --no-benign-tolerance --no-inline
// GPUVerify testsuite/OpenCL/benign_race_tests/fail/writezero_nobenign/kernel.cl (OpenCL, by hand in CUDA C)
// Note: checked as under GPUVerify's --no-benign-tolerance (strict)

extern "C" __global__ void writezero_nobenign(int i, int j) {
  volatile __shared__ int A[64];
  A[0] = 0;
}
