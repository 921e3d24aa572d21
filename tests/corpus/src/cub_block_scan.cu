// CUB tile scans: BlockLoad -> BlockScan -> BlockStore over tiles of 128 threads x 4 items, each
// tile scanned on its own (the per-tile stage of a multi-block scan). tile_exclusive_sum (int):
// warp-transposed load and store, exclusive sum, each tile's total in tile_sums.
// tile_inclusive_sum (float): vectorized load and store, raking inclusive sum.
// Launch: grid = ceildiv(n, 512), block = 128.
#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

constexpr int THREADS = 128;
constexpr int ITEMS = 4;
constexpr int TILE = THREADS * ITEMS;

extern "C" __global__ void tile_exclusive_sum(const int *in, int *out, int *tile_sums, int n) {
    using BlockLoad = cub::BlockLoad<int, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using BlockScan = cub::BlockScan<int, THREADS>;
    using BlockStore = cub::BlockStore<int, THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    __shared__ union {
        typename BlockLoad::TempStorage load;
        typename BlockScan::TempStorage scan;
        typename BlockStore::TempStorage store;
    } temp;

    int base = blockIdx.x * TILE;
    int valid = min(TILE, n - base);
    int items[ITEMS];
    BlockLoad(temp.load).Load(in + base, items, valid, 0);
    __syncthreads();
    int total;
    BlockScan(temp.scan).ExclusiveSum(items, items, total);
    __syncthreads();
    BlockStore(temp.store).Store(out + base, items, valid);
    if (threadIdx.x == 0) {
        tile_sums[blockIdx.x] = total;
    }
}

extern "C" __global__ void tile_inclusive_sum(const float *in, float *out, int n) {
    using BlockLoad = cub::BlockLoad<float, THREADS, ITEMS, cub::BLOCK_LOAD_VECTORIZE>;
    using BlockScan = cub::BlockScan<float, THREADS, cub::BLOCK_SCAN_RAKING>;
    using BlockStore = cub::BlockStore<float, THREADS, ITEMS, cub::BLOCK_STORE_VECTORIZE>;
    __shared__ typename BlockScan::TempStorage temp;

    int base = blockIdx.x * TILE;
    int valid = min(TILE, n - base);
    float items[ITEMS];
    if (valid == TILE) {
        BlockLoad().Load(in + base, items);
    } else {
        BlockLoad().Load(in + base, items, valid, 0.0f);
    }
    BlockScan(temp).InclusiveSum(items, items);
    if (valid == TILE) {
        BlockStore().Store(out + base, items);
    } else {
        BlockStore().Store(out + base, items, valid);
    }
}
