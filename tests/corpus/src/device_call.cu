// corpus-flags: -lineinfo
// Non-inlined device functions, so the PTX has .func definitions and call instructions:
// a scalar helper, a recursive function, a function returning an aggregate, an indirect call
// through a function pointer (.callprototype), constant memory and device printf (vprintf).

struct Stats {
    float mean;
    float m2;
    int count;
};

__constant__ float kPoly[4] = {0.5f, -1.25f, 2.0f, 0.125f};
__device__ int g_calls;

__device__ __noinline__ float horner(float x)
{
    float r = kPoly[3];
    for (int i = 2; i >= 0; --i) r = r * x + kPoly[i];
    return r;
}

__device__ __noinline__ unsigned gcd(unsigned a, unsigned b)
{
    return b == 0 ? a : gcd(b, a % b);
}

__device__ __noinline__ Stats welford_push(Stats s, float x)
{
    s.count += 1;
    float delta = x - s.mean;
    s.mean += delta / s.count;
    s.m2 += delta * (x - s.mean);
    return s;
}

__device__ __noinline__ float op_square(float x) { return x * x; }
__device__ __noinline__ float op_negate(float x) { return -x; }

typedef float (*unary_op)(float);

extern "C" __global__ void apply_poly(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = horner(x[i]);
}

extern "C" __global__ void pairwise_gcd(const unsigned* __restrict__ a, const unsigned* __restrict__ b,
                                        unsigned* __restrict__ g, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g[i] = gcd(a[i], b[i]);
}

extern "C" __global__ void row_stats(const float* __restrict__ x, float* __restrict__ mean,
                                     float* __restrict__ var, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    Stats s = {0.0f, 0.0f, 0};
    for (int c = 0; c < cols; ++c) s = welford_push(s, x[r * cols + c]);
    mean[r] = s.mean;
    var[r] = s.count > 1 ? s.m2 / (s.count - 1) : 0.0f;
}

extern "C" __global__ void apply_indirect(float* __restrict__ x, int which, int n)
{
    unary_op ops[2] = {op_square, op_negate};
    unary_op f = ops[which & 1];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = f(x[i]);
}

extern "C" __global__ void report(const float* __restrict__ x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] != x[i]) {
        atomicAdd(&g_calls, 1);
        printf("NaN at index %d (block %d, thread %d)\n", i, blockIdx.x, threadIdx.x);
    }
}
