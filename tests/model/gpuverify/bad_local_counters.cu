//xfail:NOT_ALL_VERIFIED
//--local_size=64 --num_groups=12 --no-inline
// GPUVerify testsuite/OpenCL/atomics/refined_atomic_abstraction/bad_local_counters/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void bad_local_counters(unsigned *globalArray) {
    __shared__ unsigned localCounter[1];
    unsigned localIndex = atomicAdd(localCounter, 1);
    // Might race, because localIndex is not necessarily unique between groups
    globalArray[localIndex] = (blockIdx.x * blockDim.x + threadIdx.x);
}
