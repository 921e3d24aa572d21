"""The GPU runtime: device, buffers, launch, timing, the persistent worker (supervisor, server,
jobs, pipe) and the one-shot worker for tools; the only code that imports torch or cuda."""
