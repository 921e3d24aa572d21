//pass
//--local_size=64 --num_groups=64
// GPUVerify testsuite/OpenCL/benign_race_tests/pass/writeinloop/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void writeinloop(int start, int end) {
  volatile __shared__ int A[64];
  for (unsigned i = start; i < end; ++i) {
    A[0] = 42;
  }
}
