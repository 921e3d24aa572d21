// vadd_guarded: c = a + b over n ints, one thread per element, with the bounds guard.
// Expected: bounds, race and barrier all hold.

extern "C" __global__ void vadd_guarded(const int* a, const int* b, int* c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
