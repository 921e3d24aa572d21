//xfail:NOT_ALL_VERIFIED
//--local_size=64 --num_groups=12 --no-inline
// GPUVerify testsuite/OpenCL/atomics/refined_atomic_abstraction/predication/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void atomic_predication(unsigned *globalCounter, float *globalArray) {
    unsigned globalIndex = 12;
    if((blockIdx.x * blockDim.x + threadIdx.x) != 13) {
        globalIndex = atomicAdd(globalCounter, 1);
    }
    globalArray[globalIndex] = (blockIdx.x * blockDim.x + threadIdx.x);
}
