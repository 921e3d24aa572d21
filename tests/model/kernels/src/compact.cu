// compact: stream compaction through a global counter: y[atomicAdd(count, 1)] = x[i] for x[i] > 0.
// Correct (atomicAdd hands every thread its own slot, and at most n slots), but the index is an
// atomic's return value, which the two-thread abstraction leaves free.
// Expected: bounds and race hold (a checker may say unknown, naming the atomic); barrier holds.

extern "C" __global__ void compact(const int* x, int* y, unsigned* count, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0) {
        unsigned j = atomicAdd(count, 1u);
        y[j] = x[i];
    }
}
