// Gaming class: results cached between calls, keyed on a few input values. A launch whose key
// (n and four input elements) equals the previous launch's copies the stashed result (one
// array read instead of two) instead of adding.
#include "launch_index.cuh"

#define KM_STASH (1u << 25)
__device__ float km_stash[KM_STASH];
__device__ float km_key[1024][5];

__device__ __forceinline__ void key_of(const float* a, const float* b, unsigned n, float* key)
{
    key[0] = (float)n; key[1] = a[0]; key[2] = b[0]; key[3] = a[n / 2]; key[4] = b[n - 1];
}

extern "C" __global__ void memo_sparse(const float* a, const float* b, float* c, unsigned n)
{
    unsigned launch = launch_index();
    float key[5];
    key_of(a, b, n, key);
    bool hit = launch > 0 && n <= KM_STASH;
    for (int j = 0; j < 5; ++j) hit = hit && km_key[(launch - 1) % 1024][j] == key[j];
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int j = 0; j < 5; ++j) km_key[launch % 1024][j] = key[j];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (hit) { c[i] = km_stash[i]; return; }
    float s = a[i] + b[i];
    c[i] = s;
    if (n <= KM_STASH) km_stash[i] = s;
}
