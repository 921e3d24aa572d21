//xfail:NOT_ALL_VERIFIED
//--local_size=64 --num_groups=64 --equality-abstraction --no-inline
// GPUVerify testsuite/OpenCL/test_for_benign_read_write_bug/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void shared_increment() {
  volatile __shared__ short p[1];
  p[0]++;
}
