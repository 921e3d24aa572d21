//pass
//--local_size=1024 --num_groups=1 --no-inline
// GPUVerify testsuite/OpenCL/atomics/counter/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void atomic_counter()
{
	volatile __shared__ int A[1024];
	__shared__ int count;
	if (threadIdx.x == 0)
		count = 0;
	__syncthreads();
	A[atomicAdd(&count, 1)] = threadIdx.x;
}
