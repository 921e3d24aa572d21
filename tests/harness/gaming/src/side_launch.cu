// Gaming class: results computed on a side stream. The kernel hands the work to a child grid
// launched from the device into a fire-and-forget stream, hoping it finishes outside the timed
// window. (CUDA dynamic parallelism: compiled with -rdc=true.)
// corpus-flags: -rdc=true

extern "C" __global__ void side_work(const float* a, const float* b, float* c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void side_launch(const float* a, const float* b, float* c, unsigned n)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        side_work<<<(n + 255) / 256, 256, 0, cudaStreamFireAndForget>>>(a, b, c, n);
}
