// Tensor-core GEMM through the nvcuda::wmma API (16x16x16 fp16 fragments, fp32 accumulate),
// one warp per 16x16 output tile; A row-major M x K, B column-major K x N, C row-major.
// This source includes <mma.h>, which needs the CUDA C++ core library headers (nv/target).

#include <mma.h>

using namespace nvcuda;

extern "C" __global__ void wmma_gemm(const half* __restrict__ A, const half* __restrict__ B,
                                     float* __restrict__ C, int M, int N, int K)
{
    int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int warp_n = blockIdx.y * blockDim.y + threadIdx.y;
    int row = warp_m * 16, col = warp_n * 16;
    if (row >= M || col >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + row * K + k, K);
        wmma::load_matrix_sync(b, B + col * K + k, K);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + row * N + col, acc, N, wmma::mem_row_major);
}
