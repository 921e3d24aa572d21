// vadd_noguard: c = a + b with the `if (i < n)` guard missing.  The grid is rounded up to
// whole blocks (ceildiv(n, 128)), so the threads with i >= n of the last block read a and b
// and write c past their end.
// Expected: bounds violated (all three global accesses); race and barrier hold.

extern "C" __global__ void vadd_noguard(const int* a, const int* b, int* c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}
