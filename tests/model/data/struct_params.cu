// A struct passed by value: nvcc passes it as one .param .b8 array and reads its fields at offsets.
struct Saxpy {
    int n;
    float a;
    const float* x;
    float* y;
};

extern "C" __global__ void saxpy_struct(Saxpy p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.y[i] = p.a * p.x[i] + p.y[i];
}
