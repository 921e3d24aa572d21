//pass
//--local_size=64 --num_groups=64 --no-inline
// GPUVerify testsuite/OpenCL/benign_race_tests/pass/writezero/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void writezero(int i, int j) {
  volatile __shared__ int A[64];
  A[0] = 0;
}
