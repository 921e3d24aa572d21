// corpus-flags: -lineinfo
// corpus-archs: sm_90 sm_120
// Hopper-and-later memory features from inline PTX: a one-dimensional bulk copy
// (cp.async.bulk) completing on an mbarrier with a transaction count, and a thread-block
// cluster exchanging values through distributed shared memory (mapa + ld.shared::cluster).

__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Each block copies n_per_block floats (n_per_block % 4 == 0, <= 2048) with one bulk copy,
// then scales them. Block b reads in[b * n_per_block ...].
extern "C" __global__ void bulk_copy_scale(const float* __restrict__ in, float* __restrict__ out,
                                           float alpha, int n_per_block)
{
    __shared__ __align__(128) float buf[2048];
    __shared__ __align__(8) unsigned long long bar;
    unsigned bar_addr = smem_addr(&bar);
    unsigned bytes = static_cast<unsigned>(n_per_block) * 4u;
    const float* src = in + (long long)blockIdx.x * n_per_block;

    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(bar_addr) : "memory");
        // The bulk copy writes through the async proxy: make the initialised barrier visible to it.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                     :: "r"(bar_addr), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1], %2, [%3];\n"
                     :: "r"(smem_addr(buf)), "l"(src), "r"(bytes), "r"(bar_addr) : "memory");
    }
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar_addr), "r"(0u) : "memory");
    }
    for (int i = threadIdx.x; i < n_per_block; i += blockDim.x)
        out[(long long)blockIdx.x * n_per_block + i] = alpha * buf[i];
}

// Clusters of two blocks: each block publishes a value in its shared memory and reads its
// partner's through the cluster's shared window.
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_exchange(int* __restrict__ out)
{
    __shared__ int value;
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    if (threadIdx.x == 0) value = static_cast<int>(blockIdx.x * 1000 + rank);
    cluster_sync();
    if (threadIdx.x == 0) {
        unsigned remote;
        int v;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                     : "=r"(remote) : "r"(smem_addr(&value)), "r"(rank ^ 1u));
        asm volatile("ld.shared::cluster.u32 %0, [%1];\n" : "=r"(v) : "r"(remote) : "memory");
        out[blockIdx.x] = v;
    }
    // The partner may still read this block's shared memory: do not exit before it is done.
    cluster_sync();
}
