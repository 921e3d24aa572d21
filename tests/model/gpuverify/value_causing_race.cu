//xfail:NOT_ALL_VERIFIED
//--gridDim=1 --blockDim=512 --no-inline
// GPUVerify testsuite/CUDA/param_values/value_causing_race/kernel.cu

// GPUVerify's __requires(0 <= x < 1000) is the spec's value: x = 185, the value of its witness.
extern "C" __global__ void value_causing_race(float * A, int x) {
    if(threadIdx.x == 15) {
        A[threadIdx.x + x] = threadIdx.x;
    }

    if(threadIdx.x == 200) {
        A[threadIdx.x] = threadIdx.x;
    }
}
