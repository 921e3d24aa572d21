// Half-precision intrinsics of cuda_fp16.h and cuda_bf16.h: nvcc writes each as inline PTX that
// declares its own registers inside a nested { } scope.
// corpus-archs: sm_90 sm_120
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// y = a * x + y on pairs of halves: __float2half2_rn, __hfma2 (one half2 per thread).
extern "C" __global__ void half2_axpy(const __half2 *x, __half2 *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __hfma2(__float2half2_rn(a), x[i], y[i]);
    }
}

// out = max(a + b, 0) elementwise on halves: __hadd, __hmax, __float2half_rn.
extern "C" __global__ void half_add_relu(const __half *a, const __half *b, __half *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = __hmax(__hadd(a[i], b[i]), __float2half_rn(0.0f));
    }
}

// f32 -> bf16 (round to nearest even) and back, and the bf16 pair sum: __float2bfloat16_rn,
// __floats2bfloat162_rn, __hadd2, __bfloat162float.
extern "C" __global__ void bf16_convert(const float *x, __nv_bfloat16 *rounded, float *pair_sum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __nv_bfloat16 r = __float2bfloat16_rn(x[i]);
        rounded[i] = r;
        __nv_bfloat162 p = __floats2bfloat162_rn(x[i], 2.0f * x[i]);
        __nv_bfloat162 s = __hadd2(p, p);
        pair_sum[i] = __bfloat162float(__low2bfloat16(s)) + __bfloat162float(__high2bfloat16(s));
    }
}
