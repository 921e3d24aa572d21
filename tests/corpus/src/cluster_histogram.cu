// corpus-flags: -lineinfo
// corpus-archs: sm_90 sm_120
// A histogram kept in the distributed shared memory of a thread-block cluster, through the
// cooperative groups cluster API: each block of a cluster of two holds half of the bins; every
// thread adds its values into the block that owns the bin (cluster.map_shared_rank + atomicAdd),
// between two cluster.sync() calls; then each block adds its bins to the global histogram.

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// values[i] is clamped to [0, bins); the launch gives (bins + 1) / 2 ints of dynamic shared memory.
extern "C" __global__ void __cluster_dims__(2, 1, 1)
    cluster_histogram(const int* __restrict__ values, int* __restrict__ hist, int n, int bins)
{
    extern __shared__ int part[];
    cg::cluster_group cluster = cg::this_cluster();
    const int ranks = static_cast<int>(cluster.num_blocks());
    const int per_block = (bins + ranks - 1) / ranks;
    const int rank = static_cast<int>(cluster.block_rank());

    for (int i = threadIdx.x; i < per_block; i += blockDim.x)
        part[i] = 0;
    cluster.sync();

    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int v = min(max(values[i], 0), bins - 1);
        int* owner = cluster.map_shared_rank(part, v / per_block);
        atomicAdd(owner + v % per_block, 1);
    }
    // No block may leave (its shared memory gone) while another still adds into it.
    cluster.sync();

    for (int i = threadIdx.x; i < per_block; i += blockDim.x) {
        const int bin = rank * per_block + i;
        if (bin < bins)
            atomicAdd(&hist[bin], part[i]);
    }
}
