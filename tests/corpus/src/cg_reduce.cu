// Cooperative-groups reductions. cg_block_sum: a grid-stride sum per thread, cg::reduce over each
// warp (tiled_partition<32>), the warps' sums through shared memory after block.sync(), then
// warp 0 reduces them and adds the block's sum to *out (launch grid = 4, block = 256).
// cg_tile16_dot: one tile of 16 threads (tiled_partition<16>) per row of a, dot with v through a
// tile.shfl_down loop (launch grid = ceildiv(rows, 8), block = 128).
// cg_count_equal: per block, how many x[i] == key, with an integer cg::reduce (launch
// grid = ceildiv(n, 256), block = 256).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

extern "C" __global__ void cg_block_sum(const float *x, float *out, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    __shared__ float warp_sums[32];

    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        v += x[i];
    }
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) {
        warp_sums[warp.meta_group_rank()] = v;
    }
    block.sync();
    if (warp.meta_group_rank() == 0) {
        v = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0.0f;
        v = cg::reduce(warp, v, cg::plus<float>());
        if (warp.thread_rank() == 0) {
            atomicAdd(out, v);
        }
    }
}

extern "C" __global__ void cg_tile16_dot(const float *a, const float *v, float *y, int rows, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);

    int row = blockIdx.x * tile.meta_group_size() + tile.meta_group_rank();
    if (row >= rows) {
        return;
    }
    float s = 0.0f;
    for (int c = tile.thread_rank(); c < cols; c += tile.size()) {
        s += a[(size_t)row * cols + c] * v[c];
    }
    for (int offset = tile.size() / 2; offset > 0; offset /= 2) {
        s += tile.shfl_down(s, offset);
    }
    if (tile.thread_rank() == 0) {
        y[row] = s;
    }
}

extern "C" __global__ void cg_count_equal(const int *x, int *block_counts, int key, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    __shared__ int warp_counts[32];

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int hit = (i < n && x[i] == key) ? 1 : 0;
    int c = cg::reduce(warp, hit, cg::plus<int>());
    if (warp.thread_rank() == 0) {
        warp_counts[warp.meta_group_rank()] = c;
    }
    block.sync();
    if (threadIdx.x == 0) {
        int total = 0;
        for (int w = 0; w < (int)warp.meta_group_size(); ++w) {
            total += warp_counts[w];
        }
        block_counts[blockIdx.x] = total;
    }
}
