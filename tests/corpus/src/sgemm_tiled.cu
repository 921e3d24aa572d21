// Tiled single-precision GEMM, C = alpha * A * B + beta * C, all row-major.
// sgemm_smem: 32x32 shared tiles, one output per thread (blockDim 32x32).
// sgemm_regblock: 64x64 block tile, BK = 8, 256 threads each computing a 4x4 micro-tile held
// in registers, float4 loads of B; requires M, N % 64 == 0 and K % 8 == 0.
// The launch bounds (256 threads, 2 blocks per SM) and the register cap of sgemm_smem put
// .maxntid, .minnctapersm and .maxnreg directives in the PTX.

#define TS 32

extern "C" __global__ void __maxnreg__(64)
sgemm_smem(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
           float beta, float* __restrict__ C)
{
    __shared__ float As[TS][TS];
    __shared__ float Bs[TS][TS];
    int row = blockIdx.y * TS + threadIdx.y;
    int col = blockIdx.x * TS + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && kb < K) ? B[kb * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TS; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4

extern "C" __global__ void __launch_bounds__(256, 2)
sgemm_regblock(int M, int N, int K, float alpha, const float* __restrict__ A,
               const float* __restrict__ B, float beta, float* __restrict__ C)
{
    // As is stored transposed (k-major) so the inner loop reads it with one vector load.
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    int tid = threadIdx.x;
    int tx = tid % (BN / TN);
    int ty = tid / (BN / TN);
    const float* Ab = A + blockIdx.y * BM * K;
    const float* Bb = B + blockIdx.x * BN;

    float acc[TM][TN] = {};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        // 256 threads load 64x8 of A (2 each) and 8x64 of B (one float4 for half of them).
        for (int l = tid; l < BM * BK; l += 256) {
            int r = l / BK, c = l % BK;
            As[c][r] = Ab[r * K + k0 + c];
        }
        if (tid < BK * BN / 4) {
            int r = tid / (BN / 4), c = (tid % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[r][c]) =
                *reinterpret_cast<const float4*>(&Bb[(k0 + r) * N + c]);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float4 a4 = *reinterpret_cast<const float4*>(&As[k][ty * TM]);
            float4 b4 = *reinterpret_cast<const float4*>(&Bs[k][tx * TN]);
            ra[0] = a4.x; ra[1] = a4.y; ra[2] = a4.z; ra[3] = a4.w;
            rb[0] = b4.x; rb[1] = b4.y; rb[2] = b4.z; rb[3] = b4.w;
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = blockIdx.y * BM + ty * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int c = blockIdx.x * BN + tx * TN + j;
            C[r * N + c] = alpha * acc[i][j] + beta * C[r * N + c];
        }
    }
}
