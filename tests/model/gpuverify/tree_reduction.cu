//pass
//--local_size=1024 --num_groups=1 --no-infer --k-induction-depth=1
// GPUVerify testsuite/OpenCL/k-induction/amazingreduction/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void tree_reduction() {
    volatile __shared__ int p[1024];
    for(int d = blockDim.x / 2; d > 0; d >>= 1) {
        __syncthreads();
        if(threadIdx.x < d) {
            p[threadIdx.x] += p[threadIdx.x + d];
        }
    }
    if(threadIdx.x == 0) {
        p[0] = threadIdx.x;
    }
}
