// Asynchronous global->shared copies with cp.async (sm_80+), issued from inline PTX.
// copy_scale: one stage, cp.async.ca + commit_group + wait_all.
// sum_double_buffered: two-stage pipeline with cp.async.cg, wait_group 1 and a tail
// wait_group 0, so loads of tile t+1 overlap the reduction of tile t.

__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void copy_scale(const float4* __restrict__ in, float4* __restrict__ out,
                                      float alpha, int n4)
{
    __shared__ __align__(16) float4 stage[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n"
                     :: "r"(smem_addr(&stage[threadIdx.x])), "l"(in + i));
    }
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    __syncthreads();
    if (i < n4) {
        float4 v = stage[threadIdx.x];
        v.x *= alpha; v.y *= alpha; v.z *= alpha; v.w *= alpha;
        out[i] = v;
    }
}

#define TILE_FLOATS 1024  // per stage; blockDim.x == 256 threads copy 4 floats (16 B) each

extern "C" __global__ void sum_double_buffered(const float* __restrict__ in, float* out, int tiles)
{
    __shared__ __align__(16) float buf[2][TILE_FLOATS];
    int t = threadIdx.x;
    const float* base = in + (long long)blockIdx.x * tiles * TILE_FLOATS;

    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                 :: "r"(smem_addr(&buf[0][t * 4])), "l"(base + t * 4));
    asm volatile("cp.async.commit_group;\n" ::);

    float acc = 0.0f;
    for (int k = 0; k < tiles; ++k) {
        int cur = k & 1;
        if (k + 1 < tiles) {
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                         :: "r"(smem_addr(&buf[cur ^ 1][t * 4])),
                            "l"(base + (long long)(k + 1) * TILE_FLOATS + t * 4));
            asm volatile("cp.async.commit_group;\n" ::);
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        }
        __syncthreads();
        for (int j = 0; j < 4; ++j) acc += buf[cur][t + j * 256];
        __syncthreads();
    }
    atomicAdd(out, acc);
}
