// corpus-flags: -lineinfo
// ldmatrix.sync.aligned.m8n8.x4.shared.b16 (and the .trans form) on a 16x16 tile of 16-bit
// values staged in shared memory; each thread writes back the four 32-bit registers it
// received, so the fragment layout can be checked against the PTX ISA description.

__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

template <bool TRANS>
__global__ void ldmatrix_x4(const unsigned short* __restrict__ tile, unsigned* __restrict__ frag)
{
    __shared__ __align__(16) unsigned short s[16 * 16];
    int lane = threadIdx.x & 31;
    // 32 threads x 16 bytes = the whole 512-byte tile.
    reinterpret_cast<uint4*>(s)[lane] = reinterpret_cast<const uint4*>(tile)[lane];
    __syncwarp();

    // Threads 0-7 give the row addresses of matrix 0, 8-15 of matrix 1, and so on; matrices
    // are ordered (rows 0-7, cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15),
    // (rows 8-15, cols 8-15).
    int row = lane & 15;
    int col = (lane >> 4) * 8;
    unsigned addr = smem_addr(&s[row * 16 + col]);
    unsigned r0, r1, r2, r3;
    if (TRANS) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    } else {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    }
    frag[lane * 4 + 0] = r0;
    frag[lane * 4 + 1] = r1;
    frag[lane * 4 + 2] = r2;
    frag[lane * 4 + 3] = r3;
}

template __global__ void ldmatrix_x4<false>(const unsigned short*, unsigned*);
template __global__ void ldmatrix_x4<true>(const unsigned short*, unsigned*);

// ldmatrix feeding mma: one warp computes a 16x8 fp32 tile from a 16x16 A and 16x8 B in shared.
extern "C" __global__ void ldmatrix_mma_tile(const unsigned short* __restrict__ A,
                                             const unsigned short* __restrict__ Bt,
                                             float* __restrict__ D)
{
    __shared__ __align__(16) unsigned short sa[16 * 16];
    __shared__ __align__(16) unsigned short sb[8 * 16];
    int lane = threadIdx.x & 31;
    reinterpret_cast<uint4*>(sa)[lane] = reinterpret_cast<const uint4*>(A)[lane];
    if (lane < 16) reinterpret_cast<uint4*>(sb)[lane] = reinterpret_cast<const uint4*>(Bt)[lane];
    __syncwarp();

    unsigned a0, a1, a2, a3, b0, b1;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
                 : "r"(smem_addr(&sa[(lane & 15) * 16 + (lane >> 4) * 8])));
    // x2: threads 0-15 give addresses; Bt rows are columns of B.
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(b0), "=r"(b1)
                 : "r"(smem_addr(&sb[(lane & 7) * 16 + ((lane >> 3) & 1) * 8])));

    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    int group = lane >> 2, tig = lane & 3;
    D[group * 8 + tig * 2] = d0;
    D[group * 8 + tig * 2 + 1] = d1;
    D[(group + 8) * 8 + tig * 2] = d2;
    D[(group + 8) * 8 + tig * 2 + 1] = d3;
}
