// shared_oob: a neighbour stencil without a halo: y[i] = s[tid] + s[tid + 1] where s holds the
// block's blockDim.x (= 128) elements of x.  The last thread of every block reads s[128],
// one element past the shared array.
// Expected: bounds violated (the load of s[tid + 1]); race and barrier hold.

extern "C" __global__ void shared_oob(const int* x, int* y)
{
    __shared__ int s[128];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = x[i];
    __syncthreads();
    y[i] = s[tid] + s[tid + 1];
}
