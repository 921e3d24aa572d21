"""One run of a kernel spec: the stage pipeline, its stages, the GPU runtime, the tool wrappers.

:mod:`~karyamorph.harness.pipeline` prepares a :class:`~karyamorph.kernel.spec.KernelSpec` (CUDA
source compiled to PTX for the target) and runs the ordered stages of
:mod:`~karyamorph.harness.stages`; :mod:`~karyamorph.harness.gpu` launches and times kernels;
:mod:`~karyamorph.harness.tools` wraps nvcc, ptxas, nvdisasm, compute-sanitizer and ncu;
:mod:`~karyamorph.harness.record` turns a result into store rows and
:mod:`~karyamorph.harness.session` does one user action end to end.
"""
