// hist_global: a global histogram with a plain read-modify-write hist[keys[i] & 255] += 1 (no
// atomic).  Two threads, of any blocks, whose keys agree in the low byte lose an update.  nvcc
// loads only the low byte of the key (ld.global.u8), and folds hist + 4 * byte into one
// concatenation of bits.
// Expected: race violated (the hist load and store); bounds and barrier hold.

extern "C" __global__ void hist_global(const int* keys, int* hist, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        hist[keys[i] & 255] += 1;   // BUG: a plain read-modify-write
}
