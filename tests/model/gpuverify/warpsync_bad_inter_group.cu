//xfail:NOT_ALL_VERIFIED
//--blockDim=128 --gridDim=128 --warp-sync=32 --no-inline
// GPUVerify testsuite/CUDA/warpsync/bad_inter_group/kernel.cu
// Note: checked as under GPUVerify's --warp-sync=32 (lockstep warps)

extern "C" __global__ void warpsync_bad_inter_group(int* A) {
    A[ blockIdx.x*blockDim.x + threadIdx.x ] += (A[ (blockIdx.x + 1)*blockDim.x + threadIdx.x ]);
}
