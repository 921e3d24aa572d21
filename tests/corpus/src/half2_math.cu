// cuda_fp16.h / cuda_bf16.h arithmetic on pairs. half2_dot_rows: one warp per row of halves
// (cols even), __hmul2 products accumulated in f32 (__half22float2), a shuffle sum, the result
// as a half (__float2half_rn); launch grid = ceildiv(rows, 4), block = 128.
// half2_scale_clamp: y = max(x / d, lo) on half2 pairs with __h2div and __hmax2; launch
// grid = ceildiv(pairs, 128), block = 128. bf16_softmax_num: e = exp2(x - rowmax) on bf16 pairs
// (__hsub2, h2exp2), rounded from f32 with __float22bfloat162_rn, and e * w with __hmul2;
// launch grid = ceildiv(pairs, 128), block = 128.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void half2_dot_rows(const __half2 *a, const __half2 *b, __half *dot, int rows,
                                          int pairs_per_row) {
    int warp = threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * 4 + warp;
    if (row >= rows) {
        return;
    }
    float s = 0.0f;
    for (int p = lane; p < pairs_per_row; p += 32) {
        size_t k = (size_t)row * pairs_per_row + p;
        float2 prod = __half22float2(__hmul2(a[k], b[k]));
        s += prod.x + prod.y;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        s += __shfl_down_sync(0xffffffffu, s, offset);
    }
    if (lane == 0) {
        dot[row] = __float2half_rn(s);
    }
}

extern "C" __global__ void half2_scale_clamp(const __half2 *x, __half2 *y, __half2 d, __half2 lo,
                                             int pairs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < pairs) {
        y[i] = __hmax2(__h2div(x[i], d), lo);
    }
}

extern "C" __global__ void bf16_softmax_num(const float2 *x, const float *row_max,
                                            const __nv_bfloat162 *w, __nv_bfloat162 *e, int pairs,
                                            int pairs_per_row) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < pairs) {
        float m = row_max[i / pairs_per_row];
        __nv_bfloat162 xb = __float22bfloat162_rn(x[i]);
        __nv_bfloat162 shifted = __hsub2(xb, __float2bfloat162_rn(m));
        e[i] = __hmul2(h2exp2(shifted), w[i]);
    }
}
