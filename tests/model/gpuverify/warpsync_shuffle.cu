//pass
//--blockDim=512 --gridDim=1 --warp-sync=32 --no-inline
// GPUVerify testsuite/CUDA/warpsync/shuffle/kernel.cu
// Note: checked as under GPUVerify's --warp-sync=32 (lockstep warps)

extern "C" __global__ void warpsync_shuffle(int* A)
{
	int tid = threadIdx.x;
	int warp = tid / 32;
	int* B = A + (warp*32);
	A[tid] = B[(tid + 1)%32];
}
