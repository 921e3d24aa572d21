//xfail:NOT_ALL_VERIFIED
//--local_size=16 --num_groups=16 --debug
// GPUVerify testsuite/OpenCL/barrier_intervals/test2/kernel.cl (OpenCL, by hand in CUDA C)

#define tid threadIdx.x

extern "C" __global__ void barrier_in_branch()
{
    volatile __shared__ int p[16];
    p[tid] = tid;
    if(tid == 0) {
        __syncthreads();
    }
    p[tid] = tid;
    __syncthreads();
    p[tid] = tid;
}
