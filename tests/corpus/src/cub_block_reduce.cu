// CUB block reductions, the first stage of a two-stage reduction: each block reduces its tile to
// one value. block_sum_partials: BlockLoad (striped, guarded) and BlockReduce::Sum (the default
// warp-reductions algorithm) over 128 threads x 4 floats; launch grid = ceildiv(n, 512),
// block = 128. block_max_rows: one block of 256 threads per row, a strided max per thread, then
// BlockReduce (raking) with cuda::maximum; launch grid = rows, block = 256.
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/limits>

constexpr int SUM_THREADS = 128;
constexpr int SUM_ITEMS = 4;
constexpr int MAX_THREADS = 256;

extern "C" __global__ void block_sum_partials(const float *x, float *partials, int n) {
    using BlockLoad = cub::BlockLoad<float, SUM_THREADS, SUM_ITEMS, cub::BLOCK_LOAD_STRIPED>;
    using BlockReduce = cub::BlockReduce<float, SUM_THREADS>;
    __shared__ typename BlockReduce::TempStorage temp;

    int tile = blockIdx.x * SUM_THREADS * SUM_ITEMS;
    float items[SUM_ITEMS];
    BlockLoad().Load(x + tile, items, n - tile, 0.0f);
    float total = BlockReduce(temp).Sum(items);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = total;
    }
}

extern "C" __global__ void block_max_rows(const int *x, int *row_max, int cols) {
    using BlockReduce = cub::BlockReduce<int, MAX_THREADS, cub::BLOCK_REDUCE_RAKING>;
    __shared__ typename BlockReduce::TempStorage temp;

    const int *row = x + (size_t)blockIdx.x * cols;
    int m = cuda::std::numeric_limits<int>::min();
    for (int c = threadIdx.x; c < cols; c += MAX_THREADS) {
        m = max(m, row[c]);
    }
    int r = BlockReduce(temp).Reduce(m, cuda::maximum<int>{});
    if (threadIdx.x == 0) {
        row_max[blockIdx.x] = r;
    }
}
