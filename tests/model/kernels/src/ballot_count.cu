// ballot_count: count[w] = number of positive x in warp w's 32 elements, with one
// __ballot_sync (full mask) per warp and a popcount in lane 0.  Every thread of the launch
// takes part (the launch covers x exactly), as the full mask requires.
// Expected: bounds, race and barrier all hold.

extern "C" __global__ void ballot_count(const int* x, int* count)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned ballot = __ballot_sync(0xffffffffu, x[i] > 0);
    if ((threadIdx.x & 31) == 0)
        count[i >> 5] = __popc(ballot);
}
