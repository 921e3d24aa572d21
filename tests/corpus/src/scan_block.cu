// Block-wide inclusive scans: Hillis-Steele (double-buffered) and Blelloch (work-efficient,
// exclusive, in place). Each block scans its own segment of blockDim.x (resp. 2*blockDim.x)
// elements.

extern "C" __global__ void scan_hillis_steele(const int* __restrict__ in, int* __restrict__ out, int n)
{
    extern __shared__ int temp[];  // 2 * blockDim.x ints
    int tid = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + tid;
    int pout = 0, pin = 1;

    temp[pout * blockDim.x + tid] = gid < n ? in[gid] : 0;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        pout = 1 - pout;
        pin = 1 - pout;
        int v = temp[pin * blockDim.x + tid];
        if (tid >= offset) v += temp[pin * blockDim.x + tid - offset];
        temp[pout * blockDim.x + tid] = v;
        __syncthreads();
    }
    if (gid < n) out[gid] = temp[pout * blockDim.x + tid];
}

extern "C" __global__ void scan_blelloch(float* data, float* block_sums, int n)
{
    extern __shared__ float s[];  // 2 * blockDim.x floats
    int tid = threadIdx.x;
    int m = 2 * blockDim.x;
    int base = blockIdx.x * m;

    s[2 * tid] = base + 2 * tid < n ? data[base + 2 * tid] : 0.0f;
    s[2 * tid + 1] = base + 2 * tid + 1 < n ? data[base + 2 * tid + 1] : 0.0f;

    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {  // up-sweep
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            s[bi] += s[ai];
        }
        offset <<= 1;
    }
    if (tid == 0) {
        if (block_sums) block_sums[blockIdx.x] = s[m - 1];
        s[m - 1] = 0.0f;
    }
    for (int d = 1; d < m; d <<= 1) {  // down-sweep
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            float t = s[ai];
            s[ai] = s[bi];
            s[bi] += t;
        }
    }
    __syncthreads();
    if (base + 2 * tid < n) data[base + 2 * tid] = s[2 * tid];
    if (base + 2 * tid + 1 < n) data[base + 2 * tid + 1] = s[2 * tid + 1];
}
