"""The GPU runtime: device, buffers, launch, timing, the persistent worker (supervisor, server,
jobs, pipe) and the one-shot worker for tools. Kernels are launched only here (torch and cuda.core);
elsewhere torch builds CPU references (:mod:`karyamorph.harness.model_run`) and the toolchain finds
the CUDA wheels (:mod:`karyamorph.harness.tools.toolchain`)."""
