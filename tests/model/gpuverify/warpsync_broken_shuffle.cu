//xfail:NOT_ALL_VERIFIED
//--blockDim=1024 --gridDim=1 --warp-sync=16 --no-inline
// GPUVerify testsuite/CUDA/warpsync/broken_shuffle/kernel.cu
// Note: GPUVerify's --warp-sync=16 has no counterpart (warps are 32 lanes): checked without lockstep

extern "C" __global__ void warpsync_broken_shuffle(int* A)
{
	int tid = threadIdx.x;
	int warp = tid / 32;
	int* B = A + (warp*32);
	A[tid] = B[(tid + 1)%32];
}
