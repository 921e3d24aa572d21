//pass
//--blockDim=512 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/misc/pass/misc1/kernel.cu

// GPUVerify's __requires(x == 143) is the spec's value; its loop invariant is left out.
extern "C" __global__ void strided_shared_init(int x)
{
    volatile __shared__ float S[256*32];
    volatile __shared__ float F[256];

    unsigned int idx;

    for(int i = 0; i < x; i += (blockDim.x/32))
    {
        if((i+(threadIdx.x/32)) < x){
            idx = (i+(threadIdx.x/32))*32+(threadIdx.x%32);
            S[idx] = F[i+(threadIdx.x/32)];
        }
    }
}
