//pass
//--local_size=64 --num_groups=64 --no-inline
// GPUVerify testsuite/OpenCL/test_local_id_inference/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void local_id_loop()
{
  volatile __shared__ int A[64];
  int tid = threadIdx.x;
  A[tid] = 0;
  for(int i = 0; i < 100; i++)
  {
    A[tid]++;
  }
}
