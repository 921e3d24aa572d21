//xfail:NOT_ALL_VERIFIED
//--local_size=1024 --num_groups=1 --no-inline
// GPUVerify testsuite/OpenCL/atomics/atomic_read_race/kernel.cl (OpenCL, by hand in CUDA C)
// Translation: volatile private x -> out[tid]

// The test's volatile private x becomes a store to out[tid], so the read stays.
extern "C" __global__ void atomic_read_race(int* out)
{
    __shared__ int A[1024];
    out[threadIdx.x] = A[threadIdx.x];
    atomicAdd(A, 1);
}
