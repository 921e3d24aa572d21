//xfail:NOT_ALL_VERIFIED
//--local_size=64 --global_size=256
// GPUVerify testsuite/OpenCL/misc/fail/struct_member_race/kernel.cl (OpenCL, by hand in CUDA C)

typedef struct {
    int x;
    int y;
} S;

extern "C" __global__ void struct_member_race(S *G) {
    G[3].y = (blockIdx.x * blockDim.x + threadIdx.x);
}
