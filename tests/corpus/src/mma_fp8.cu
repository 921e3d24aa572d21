// corpus-archs: sm_89 sm_120a
// Eight-bit floating-point tensor-core MMA from inline PTX, one warp, fragments given per
// lane (A: 4 x b32 of packed e4m3, B: 2 x b32, C/D: 4 x f32), as in the PTX ISA section
// "Matrix Fragments for mma.m16n8k32". The .kind::f8f6f4 form (which also takes the fp6
// and fp4 types) needs an arch-specific target such as sm_120a.

extern "C" __global__ void mma_e4m3(const unsigned* __restrict__ a, const unsigned* __restrict__ b,
                                    float* __restrict__ d)
{
    int lane = threadIdx.x & 31;
    unsigned a0 = a[lane * 4], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
    unsigned b0 = b[lane * 2], b1 = b[lane * 2 + 1];
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    d[lane * 4] = d0;
    d[lane * 4 + 1] = d1;
    d[lane * 4 + 2] = d2;
    d[lane * 4 + 3] = d3;
}

#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
// e2m1 (fp4) A times e4m3 B: the operands stay 8-bit containers in registers.
extern "C" __global__ void mma_f8f6f4_e2m1_e4m3(const unsigned* __restrict__ a,
                                                const unsigned* __restrict__ b, float* __restrict__ d)
{
    int lane = threadIdx.x & 31;
    unsigned a0 = a[lane * 4], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
    unsigned b0 = b[lane * 2], b1 = b[lane * 2 + 1];
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e2m1.e4m3.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    d[lane * 4] = d0;
    d[lane * 4 + 1] = d1;
    d[lane * 4 + 2] = d2;
    d[lane * 4 + 3] = d3;
}
#endif
