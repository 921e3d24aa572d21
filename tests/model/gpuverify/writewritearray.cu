//pass
//--local_size=64 --num_groups=64 --equality-abstraction --no-inline
// GPUVerify testsuite/OpenCL/benign_race_tests/pass/writewritearray/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void writewritearray(int i, int j) {
  volatile __shared__ int A[64];
  volatile __shared__ int B[64];
  A[i] = B[j];
}
