// vadd_offbyone: c = a + b with the guard written `i <= n` instead of `i < n`: exactly the
// thread with i == n reads a[n], b[n] and writes c[n], one element past each buffer.
// Expected: bounds violated (all three global accesses, only at i == n); race and barrier hold.

extern "C" __global__ void vadd_offbyone(const int* a, const int* b, int* c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)
        c[i] = a[i] + b[i];
}
