// CUB warp reductions: one warp per row. warp_row_sum: each lane sums a strided slice of its
// row, cub::WarpReduce<float>::Sum gives the row sum (4 warps per block; launch
// grid = ceildiv(rows, 4), block = 128). segment_max16: logical warps of 16 lanes
// (cub::WarpReduce<int, 16>), one per 16-element segment, max with cuda::maximum (launch
// grid = ceildiv(segments, 8), block = 128).
#include <cub/warp/warp_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/limits>

constexpr int WARPS = 4;

extern "C" __global__ void warp_row_sum(const float *x, float *row_sum, int rows, int cols) {
    using WarpReduce = cub::WarpReduce<float>;
    __shared__ typename WarpReduce::TempStorage temp[WARPS];

    int warp = threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * WARPS + warp;
    if (row >= rows) {
        return;
    }
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        s += x[(size_t)row * cols + c];
    }
    float total = WarpReduce(temp[warp]).Sum(s);
    if (lane == 0) {
        row_sum[row] = total;
    }
}

extern "C" __global__ void segment_max16(const int *x, int *seg_max, int segments) {
    using WarpReduce = cub::WarpReduce<int, 16>;
    __shared__ typename WarpReduce::TempStorage temp[8];

    int group = threadIdx.x / 16;
    int seg = blockIdx.x * 8 + group;
    int v = seg < segments ? x[seg * 16 + threadIdx.x % 16] : cuda::std::numeric_limits<int>::min();
    int m = WarpReduce(temp[group]).Reduce(v, cuda::maximum<int>{});
    if (threadIdx.x % 16 == 0 && seg < segments) {
        seg_max[seg] = m;
    }
}
