//xfail:NOT_ALL_VERIFIED
//--blockDim=8 --gridDim=1 --no-inline
// GPUVerify testsuite/CUDA/globalarray/fail/kernel.cu
// Note: the __constant__ table's initializer makes a != threadIdx.x false for every thread; GPUVerify treats the table as host-writable

// The statically given values for A are not preserved when we translate CUDA
// since the host is free to change the contents of A.
__constant__ int A[8] = {0,1,2,3,4,5,6,7};

extern "C" __global__ void globalarray_fail(float* p) {
  int i = threadIdx.x;
  int a = A[i];

  if(a != threadIdx.x) {
    p[0] = threadIdx.x;
  }
}
