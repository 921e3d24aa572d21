//pass
//--local_size=64 --num_groups=64 --no-inline
// GPUVerify testsuite/OpenCL/benign_race_tests/pass/writetiddiv64/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void writetiddiv64(int i) {
  volatile __shared__ int A[64];
  A[i] = threadIdx.x / 64;
}
