//xfail:NOT_ALL_VERIFIED
//--local_size=64 --num_groups=64
// GPUVerify testsuite/OpenCL/misc/fail/miscfail10/kernel.cl (OpenCL, by hand in CUDA C)

extern "C" __global__ void global_accumulate_race(unsigned *h1, unsigned *h2, int i)
{
    unsigned *h = i > 0 ? h1 : h2;
    __shared__ unsigned l[256];
    for(unsigned i = 0; i < 256; i += 1)
    {
       h[i] += l[i];
    }
}
