// Module variables with initializers: a __constant__ table and a __device__ array.
__constant__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__device__ float lut[] = {0.5f, 1.5f, 2.5f, 3.5f};

extern "C" __global__ void const_lookup(const int* idx, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = table[idx[i] & 3];
}

extern "C" __global__ void global_lookup(const int* idx, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = lut[idx[i] & 3] + table[i & 3];
}
