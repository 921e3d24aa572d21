// corpus-flags: -lineinfo
// One warp per 16x8 tile of D = A * B + C with the tensor-core instruction
// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32, issued from inline PTX. Half-precision
// values are passed as raw 16-bit patterns, so no half-precision header is needed.
// A is M x K row-major, B is given as Bt (N x K row-major, i.e. B column-major), C/D are M x N
// row-major fp32; M % 16 == 0, N % 8 == 0, K % 16 == 0. Fragment layout: PTX ISA, section
// "Matrix Fragments for mma.m16n8k16 with floating point type".

extern "C" __global__ void mma_m16n8k16_gemm(const unsigned short* __restrict__ A,
                                             const unsigned short* __restrict__ Bt,
                                             const float* __restrict__ C, float* __restrict__ D,
                                             int M, int N, int K)
{
    int lane = threadIdx.x & 31;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int tiles_n = N / 8;
    int tm = warp / tiles_n;
    int tn = warp % tiles_n;
    if (tm * 16 >= M) return;

    int group = lane >> 2;
    int tig = lane & 3;
    int row0 = tm * 16 + group;
    int row1 = row0 + 8;
    int col = tn * 8 + tig * 2;

    float c0 = C[row0 * N + col], c1 = C[row0 * N + col + 1];
    float c2 = C[row1 * N + col], c3 = C[row1 * N + col + 1];

    const unsigned* A32 = reinterpret_cast<const unsigned*>(A);
    const unsigned* B32 = reinterpret_cast<const unsigned*>(Bt);
    int bn = tn * 8 + group;
    for (int k0 = 0; k0 < K; k0 += 16) {
        int ka = k0 + tig * 2;
        unsigned a0 = A32[(row0 * K + ka) / 2];
        unsigned a1 = A32[(row1 * K + ka) / 2];
        unsigned a2 = A32[(row0 * K + ka + 8) / 2];
        unsigned a3 = A32[(row1 * K + ka + 8) / 2];
        unsigned b0 = B32[(bn * K + ka) / 2];
        unsigned b1 = B32[(bn * K + ka + 8) / 2];
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
            "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }

    D[row0 * N + col] = c0;
    D[row0 * N + col + 1] = c1;
    D[row1 * N + col] = c2;
    D[row1 * N + col + 1] = c3;
}

// Integer variant: m16n8k32 s8 x s8 -> s32, to have a second mma shape and type in the corpus.
extern "C" __global__ void mma_m16n8k32_s8(const int* __restrict__ Afrag, const int* __restrict__ Bfrag,
                                           int* __restrict__ D)
{
    int lane = threadIdx.x & 31;
    int a0 = Afrag[lane * 4 + 0], a1 = Afrag[lane * 4 + 1];
    int a2 = Afrag[lane * 4 + 2], a3 = Afrag[lane * 4 + 3];
    int b0 = Bfrag[lane * 2 + 0], b1 = Bfrag[lane * 2 + 1];
    int d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    D[lane * 4 + 0] = d0;
    D[lane * 4 + 1] = d1;
    D[lane * 4 + 2] = d2;
    D[lane * 4 + 3] = d3;
}
