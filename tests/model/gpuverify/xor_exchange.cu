//pass
//--local_size=32 --num_groups=1 --no-inline
// GPUVerify testsuite/OpenCL/misc/pass/misc2/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void xor_exchange()
{
    volatile __shared__ int shared[32];
    for (unsigned int j = 1; j>0; j /= 2)
    {
      unsigned int ixj = threadIdx.x ^ j;
      if (ixj > threadIdx.x)
      {
        if ((threadIdx.x & 2) == 0)
        {
          shared[ixj] = shared[threadIdx.x];
        }
      }
      __syncthreads();
    }
}
