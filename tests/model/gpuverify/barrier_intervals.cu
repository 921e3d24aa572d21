//pass
//--local_size=16 --num_groups=16 --debug
// GPUVerify testsuite/OpenCL/barrier_intervals/test1/kernel.cl (OpenCL, by hand in CUDA C)

#define tid threadIdx.x

extern "C" __global__ void barrier_intervals()
{
    volatile __shared__ int p[16];
    p[tid] = tid;
    __syncthreads();
    p[tid] = tid;
    __syncthreads();
    p[tid] = tid;
}
