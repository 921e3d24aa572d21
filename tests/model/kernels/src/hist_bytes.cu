// hist_bytes: a shared histogram of bytes with a plain read-modify-write h[in[i]] += 1 in a
// grid-stride loop.  Two threads of a block whose input bytes are equal lose an update: the race
// exists only for such inputs, and a witness must say which.
// Expected: race violated (the h[in[i]] load and store); bounds and barrier hold.

extern "C" __global__ void hist_bytes(const unsigned char* in, unsigned* out, int n)
{
    __shared__ unsigned h[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        h[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        h[in[i]] += 1;   // BUG: a plain read-modify-write
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        atomicAdd(&out[i], h[i]);
}
