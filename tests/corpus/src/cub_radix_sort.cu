// CUB block radix sort: each block sorts its tile of 64 threads x 4 keys (the local sort of a
// tiled sort). sort_tiles: 32-bit unsigned keys, striped load, blocked store.
// sort_pairs_tiles: keys with their values (indices), 8 key bits.
// Launch: grid = tiles, block = 64; n is a multiple of 256.
#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_store.cuh>

constexpr int THREADS = 64;
constexpr int ITEMS = 4;
constexpr int TILE = THREADS * ITEMS;

extern "C" __global__ void sort_tiles(const unsigned *keys_in, unsigned *keys_out) {
    using BlockRadixSort = cub::BlockRadixSort<unsigned, THREADS, ITEMS>;
    __shared__ typename BlockRadixSort::TempStorage temp;

    int base = blockIdx.x * TILE;
    unsigned keys[ITEMS];
    cub::LoadDirectStriped<THREADS>(threadIdx.x, keys_in + base, keys);
    BlockRadixSort(temp).Sort(keys);
    cub::StoreDirectBlocked(threadIdx.x, keys_out + base, keys);
}

extern "C" __global__ void sort_pairs_tiles(const unsigned char *keys_in, unsigned char *keys_out,
                                            int *perm) {
    using BlockRadixSort = cub::BlockRadixSort<unsigned char, THREADS, ITEMS, int>;
    __shared__ typename BlockRadixSort::TempStorage temp;

    int base = blockIdx.x * TILE;
    unsigned char keys[ITEMS];
    int values[ITEMS];
    for (int k = 0; k < ITEMS; ++k) {
        keys[k] = keys_in[base + threadIdx.x * ITEMS + k];
        values[k] = threadIdx.x * ITEMS + k;
    }
    BlockRadixSort(temp).Sort(keys, values);
    for (int k = 0; k < ITEMS; ++k) {
        keys_out[base + threadIdx.x * ITEMS + k] = keys[k];
        perm[base + threadIdx.x * ITEMS + k] = values[k];
    }
}
