//pass
//--local_size=128 --num_groups=16 --no-inline
// GPUVerify testsuite/OpenCL/test_global_id_inference/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void global_id_loop(int* A, int* B)
{
  int tid = threadIdx.x;
  int gidx = blockIdx.x*blockDim.x + tid;
  for(int i = 0; i < 100; i++)
  {
    A[gidx] = B[gidx] + 2;
    B[gidx]++;
  }
}
