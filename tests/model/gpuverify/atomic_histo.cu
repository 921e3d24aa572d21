//pass
//--local_size=1024 --num_groups=1 --no-inline
// GPUVerify testsuite/OpenCL/atomics/histo/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void atomic_histo()
{
	volatile __shared__ int A[1024];
	__shared__ int B[1024];
	int tid = threadIdx.x;
	int t = A[tid];
	atomicAdd(B + t, 1);
}
