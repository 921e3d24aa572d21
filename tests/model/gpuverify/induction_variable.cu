//PASS
//--local_size=1024 --num_groups=2
// GPUVerify testsuite/OpenCL/induction_variable/kernel.cl (OpenCL, by hand in CUDA C)
// Translation: data of 10240 ints, what the loop writes

extern "C" __global__ void induction_variable()
{
  volatile __shared__ int data[10240];
  int j = 0;
  for (int i = 0; i < 10; i++, j += blockDim.x) {
    data[j + threadIdx.x] = threadIdx.x;
  }
}
