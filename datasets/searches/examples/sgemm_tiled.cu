// Tiled SGEMM in fp32: C = A @ B for row-major A (M x K), B (K x N) and C (M x N).
//
// A block computes a BM x BN tile of C, each of its (BM / TM) * (BN / TN) threads a TM x TN
// piece of that tile, kept in registers. The block walks K in steps of BK, staging a BM x BK
// tile of A (stored transposed, so a thread's TM values of one k are adjacent) and a BK x BN
// tile of B in shared memory. Tiles past the matrices' edges are filled with zeros and only
// elements inside C are written, so any M, N and K work. The tile sizes are macros a search sets
// (sgemm_tiled.toml: -DBM=64 -DBN=64 -DBK=8 -DTM=4 -DTN=4 ...).

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(TM) || !defined(TN)
#error "the tile sizes BM, BN, BK, TM and TN come from the spec: -DBM=64 -DBN=64 -DBK=8 -DTM=4 -DTN=4"
#endif
#if BM % TM != 0 || BN % TN != 0
#error "a thread's piece must divide the tile: BM % TM == 0 and BN % TN == 0"
#endif

constexpr int THREADS = (BM / TM) * (BN / TN);

extern "C" __global__ void sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, unsigned M, unsigned N, unsigned K) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN);  // the thread's columns: tx * TN ...
    const int ty = tid / (BN / TN);  // and rows: ty * TM ... of the block's tile
    const unsigned row0 = blockIdx.y * BM;
    const unsigned col0 = blockIdx.x * BN;

    float acc[TM][TN] = {};
    for (unsigned k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += THREADS) {
            const int m = i / BK, k = i % BK;  // consecutive threads read along a row of A
            const unsigned r = row0 + m, c = k0 + k;
            As[k][m] = (r < M && c < K) ? A[(size_t)r * K + c] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += THREADS) {
            const int k = i / BN, n = i % BN;  // and along a row of B
            const unsigned r = k0 + k, c = col0 + n;
            Bs[k][n] = (r < K && c < N) ? B[(size_t)r * N + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();  // the next step overwrites the tiles
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const unsigned r = row0 + ty * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const unsigned c = col0 + tx * TN + j;
            if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];
        }
    }
}
