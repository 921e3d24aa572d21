// Tiled SGEMM in fp32: C = A @ B for row-major A (M x K), B (K x N) and C (M x N).
//
// Three levels of tiles, each sized by macros a search sets (sgemm_tiled.toml):
// - a block computes a BM x BN tile of C, walking K in steps of BK with a BM x BK tile of A
//   (stored transposed, As[k][m], so a thread's rows of one k are adjacent) and a BK x BN tile
//   of B staged in shared memory;
// - each of its warps computes a WM x WN piece of that tile, as WMITER x WNITER sub-tiles of
//   (WM / WMITER) x (WN / WNITER), so that a warp reads few rows and columns of the tiles;
// - each thread computes a TM x TN piece of every sub-tile, in registers.
// The tiles are double-buffered: while the block computes on one pair, its threads hold the
// next step's tiles in registers, read from global memory before the arithmetic and written to
// the other pair after it, so one barrier a step suffices and the loads' latency is hidden.
// Global memory is read and written four floats at a time where a row holds them whole (K or N
// a multiple of 4), else one at a time; tiles past the matrices' edges are zero-filled and only
// elements inside C are written, so any M, N and K work.

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WM) || !defined(WN) || \
    !defined(TM) || !defined(TN) || !defined(WNITER)
#error "the tile sizes come from the spec: -DBM=64 -DBN=64 -DBK=8 -DWM=32 -DWN=32 -DTM=4 -DTN=4 -DWNITER=1"
#endif

constexpr int THREADS = 32 * (BM / WM) * (BN / WN);
constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
constexpr int WSUBM = WM / WMITER;  // a sub-tile's rows
constexpr int WSUBN = WN / WNITER;  // and columns
constexpr int LANES_N = WSUBN / TN; // a sub-tile's threads across

static_assert(BM % WM == 0 && BN % WN == 0, "the warps' pieces must tile the block's tile");
static_assert(WMITER >= 1 && WMITER * 32 * TM * TN * WNITER == WM * WN,
              "a warp's piece must split into 32 threads' TM x TN pieces of whole sub-tiles");
static_assert(WSUBM % TM == 0 && WSUBN % TN == 0 && (WSUBM / TM) * LANES_N == 32,
              "the 32 threads of a warp must cover a sub-tile");
static_assert(BK % 4 == 0 && BN % 4 == 0, "tiles are loaded four floats at a time");

constexpr int A_VECS = BM * BK / 4, B_VECS = BK * BN / 4;  // float4s in a tile of A, of B
constexpr int A_EACH = (A_VECS + THREADS - 1) / THREADS;   // and each thread's share
constexpr int B_EACH = (B_VECS + THREADS - 1) / THREADS;

// Elements (row, col .. col + 3) of a row-major rows x cols matrix, zero past its edges.
__device__ __forceinline__ float4 load4(const float* __restrict__ p, unsigned row, unsigned col,
                                        unsigned rows, unsigned cols) {
    if (row < rows && col + 3 < cols && cols % 4 == 0)
        return *reinterpret_cast<const float4*>(p + (size_t)row * cols + col);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < rows) {
        const float* r = p + (size_t)row * cols;
        if (col + 0 < cols) v.x = r[col + 0];
        if (col + 1 < cols) v.y = r[col + 1];
        if (col + 2 < cols) v.z = r[col + 2];
        if (col + 3 < cols) v.w = r[col + 3];
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            unsigned M, unsigned N, unsigned K) {
    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wrow = (warp / (BN / WN)) * WM;  // the warp's piece of the block's tile
    const int wcol = (warp % (BN / WN)) * WN;
    const int trow = (lane / LANES_N) * TM;     // the thread's place in each sub-tile
    const int tcol = (lane % LANES_N) * TN;
    const unsigned row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float4 ra[A_EACH], rb[B_EACH];  // the next step's tiles, on their way to shared memory
    // Read the tiles of the step at k0 into ra and rb.
#define FETCH(k0)                                                                  \
    _Pragma("unroll") for (int l = 0; l < A_EACH; ++l) {                           \
        const int v = tid + l * THREADS, m = v / (BK / 4), k = (v % (BK / 4)) * 4; \
        if (v < A_VECS) ra[l] = load4(A, row0 + m, (k0) + k, M, K);                \
    }                                                                              \
    _Pragma("unroll") for (int l = 0; l < B_EACH; ++l) {                           \
        const int v = tid + l * THREADS, k = v / (BN / 4), n = (v % (BN / 4)) * 4; \
        if (v < B_VECS) rb[l] = load4(B, (k0) + k, col0 + n, K, N);                \
    }
    // Write ra and rb into the pair of tiles s (A transposed).
#define STASH(s)                                                                   \
    _Pragma("unroll") for (int l = 0; l < A_EACH; ++l) {                           \
        const int v = tid + l * THREADS, m = v / (BK / 4), k = (v % (BK / 4)) * 4; \
        if (v < A_VECS) {                                                          \
            As[s][k + 0][m] = ra[l].x;                                             \
            As[s][k + 1][m] = ra[l].y;                                             \
            As[s][k + 2][m] = ra[l].z;                                             \
            As[s][k + 3][m] = ra[l].w;                                             \
        }                                                                          \
    }                                                                              \
    _Pragma("unroll") for (int l = 0; l < B_EACH; ++l) {                           \
        const int v = tid + l * THREADS, k = v / (BN / 4), n = (v % (BN / 4)) * 4; \
        if (v < B_VECS) *reinterpret_cast<float4*>(&Bs[s][k][n]) = rb[l];          \
    }

    float acc[WMITER * TM][WNITER * TN] = {};
    FETCH(0u)
    STASH(0)
    __syncthreads();
    int s = 0;
    for (unsigned k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) {
            FETCH(k0 + BK)
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[WMITER * TM], b[WNITER * TN];
#pragma unroll
            for (int i = 0; i < WMITER; ++i)
#pragma unroll
                for (int t = 0; t < TM; ++t) a[i * TM + t] = As[s][k][wrow + i * WSUBM + trow + t];
#pragma unroll
            for (int j = 0; j < WNITER; ++j)
#pragma unroll
                for (int t = 0; t < TN; ++t) b[j * TN + t] = Bs[s][k][wcol + j * WSUBN + tcol + t];
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += a[i] * b[j];
        }
        if (more) {
            // The other pair was last read in the step before, which every thread has left:
            // the barrier that ended it is behind us.
            STASH(s ^ 1)
        }
        __syncthreads();  // the next step reads what was just written
        s ^= 1;
    }
#undef FETCH
#undef STASH
#pragma unroll
    for (int i = 0; i < WMITER; ++i) {
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            const unsigned r = row0 + wrow + i * WSUBM + trow + t;
            if (r >= M) continue;
            float* out = C + (size_t)r * N;
#pragma unroll
            for (int j = 0; j < WNITER; ++j) {
                const unsigned c = col0 + wcol + j * WSUBN + tcol;
                const float* x = &acc[i * TM + t][j * TN];
                if (TN % 4 == 0 && N % 4 == 0 && c + TN <= N) {
#pragma unroll
                    for (int u = 0; u < TN; u += 4)
                        *reinterpret_cast<float4*>(out + c + u) = make_float4(x[u], x[u + 1], x[u + 2], x[u + 3]);
                } else {
#pragma unroll
                    for (int u = 0; u < TN; ++u)
                        if (c + u < N) out[c + u] = x[u];
                }
            }
        }
    }
}
