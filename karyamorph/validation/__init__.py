"""Model validation: every modeled instruction form run on the GPU and compared with the model.

:mod:`~karyamorph.validation.forms` enumerates the forms, :mod:`~karyamorph.validation.cases` and
:mod:`~karyamorph.validation.microkernel` build their inputs and kernels, the model answers them on
the CPU, :mod:`~karyamorph.validation.compare` judges the two, :mod:`~karyamorph.validation.validate`
runs it all (on the GPU through :mod:`karyamorph.harness.gpu.validate`, or on an emulator), and
:mod:`~karyamorph.validation.recording` writes and replays the recorded GPU results. The package
sits above the harness; nothing below it imports it.
"""
