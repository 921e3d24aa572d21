//xfail:NOT_ALL_VERIFIED
//--local_size=1024 --num_groups=1 --no-inline
// GPUVerify testsuite/OpenCL/atomics/forloop/kernel.cl (OpenCL, by hand in CUDA C)

// v starts at 0 (the test leaves it undefined).
extern "C" __global__ void atomic_forloop(int* A, int* B, int* C, int x)
{
	int v = 0;
	int i;
	int tid = (blockIdx.x * blockDim.x + threadIdx.x);
	for (i = 0; i < x; i++)
	{
		v = atomicAdd(B+i, v);
	}
	B[tid] = v;
}
