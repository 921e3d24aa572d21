//xfail:NOT_ALL_VERIFIED
//--local_size=64 --num_groups=64 --no-inline
// GPUVerify testsuite/OpenCL/alignment/race_location/kernel.cl (OpenCL, by hand in CUDA C)
// Translation: int3 -> int4 (OpenCL int3 has the size of int4)

// OpenCL's int3 is 16 bytes wide (CUDA's is 12): the element is an int4 here.
extern "C" __global__ void vector_store_race(int4 *n)
{
  int g = (blockIdx.x * blockDim.x + threadIdx.x);
  n[200] = make_int4(g, g, g, g);
}
