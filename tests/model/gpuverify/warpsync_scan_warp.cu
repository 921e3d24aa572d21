//pass
//--blockDim=512 --gridDim=1 --warp-sync=32 --no-inline
// GPUVerify testsuite/CUDA/warpsync/scan_warp/kernel.cu
// Note: checked as under GPUVerify's --warp-sync=32 (lockstep warps)

extern "C" __global__ void warpsync_scan_warp(int* A)
{
	int tid = threadIdx.x;
	unsigned int lane = tid & 31;

	if (lane >= 1) A[tid] = A[tid - 1] + A[tid];
	if (lane >= 2) A[tid] = A[tid - 2] + A[tid];
	if (lane >= 4) A[tid] = A[tid - 4] + A[tid];
	if (lane >= 8) A[tid] = A[tid - 8] + A[tid];
	if (lane >= 16) A[tid] = A[tid - 16] + A[tid];
}
