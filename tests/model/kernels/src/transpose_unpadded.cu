// transpose_unpadded: y (w x h) = transpose of x (h x w), both row-major, through an unpadded
// 16 x 16 shared tile (bank conflicts, same results).  Block (16, 16).
// Expected: bounds, race and barrier all hold; equivalent to transpose_tiled.

#define TILE 16

extern "C" __global__ void transpose_unpadded(const float* x, float* y, unsigned w, unsigned h)
{
    __shared__ float tile[TILE][TILE];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned col = blockIdx.x * TILE + tx;
    unsigned row = blockIdx.y * TILE + ty;
    if (col < w && row < h)
        tile[ty][tx] = x[row * w + col];
    __syncthreads();
    col = blockIdx.y * TILE + tx;
    row = blockIdx.x * TILE + ty;
    if (col < h && row < w)
        y[row * h + col] = tile[tx][ty];
}
