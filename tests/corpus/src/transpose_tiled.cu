// corpus-flags: -lineinfo
// Matrix transpose through a shared-memory tile; the +1 column padding avoids bank conflicts
// on the column-wise reads.

#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_tiled(float* __restrict__ out, const float* __restrict__ in,
                                           int width, int height)
{
    __shared__ float tile[TILE][TILE + 1];

    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();

    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width)
            out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Naive version kept for comparison: uncoalesced writes, no shared memory.
extern "C" __global__ void transpose_naive(float* __restrict__ out, const float* __restrict__ in,
                                           int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) out[x * height + y] = in[y * width + x];
}
