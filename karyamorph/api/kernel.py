"""One PTX entry as a user holds it: made from PTX, CUDA source or a spec; compiled, disassembled
and launched in this process."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.api.arguments import ArgumentPlan
from karyamorph.api.launcher import Dim3, LoadedFunction, dim3, hashable, issue, launch_device, stream_handle
from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.launch import (
    DEFAULT_DYNAMIC_SHARED_LIMIT,
    allow_dynamic_shared,
    as_cuda_error,
    cu_function,
    cuda_core_errors,
)
from karyamorph.harness.pipeline import check_arch, default_arch
from karyamorph.harness.session import load_bound
from karyamorph.harness.tools.nvcc import compile_cuda
from karyamorph.harness.tools.nvdisasm import disassemble
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.mangling import resolve_entry
from karyamorph.kernel.spec import CudaSource, KernelSpec, SpecError
from karyamorph.model.check.checker import check as check_launch
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.budget import ModelBudget
from karyamorph.model.interp.interpreter import InterpResult, interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.simt_machine import Machine


@dataclass(frozen=True, slots=True)
class Compiled:
    """What ptxas made of an entry for one target (``ptxas -v``'s report).

    Attributes
    ----------
    arch : str
        The target, e.g. ``"sm_90"``.
    registers : int or None
        Registers per thread.
    spill_stores_bytes, spill_loads_bytes : int
        Bytes spilled to and reloaded from local memory.
    shared_bytes : int
        Static shared memory per block.
    stack_bytes, local_bytes : int
        The stack frame and local memory per thread.
    cubin : bytes
        The ELF object, as the driver loads it.
    log : str
        ptxas's whole output.
    """

    arch: str
    registers: int | None
    spill_stores_bytes: int
    spill_loads_bytes: int
    shared_bytes: int
    stack_bytes: int
    local_bytes: int
    cubin: bytes = field(repr=False)
    log: str = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict; the cubin as its size, ``cubin_bytes``."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "cubin"}
        data["cubin_bytes"] = len(self.cubin)
        return data


def _read(path_or_text: str | Path, suffix: str) -> tuple[str, str, Path | None]:
    """(text, file name for messages, path): a Path or a one-line string ending in ``suffix`` is
    a file; anything else is the text itself."""
    if isinstance(path_or_text, Path) or ("\n" not in path_or_text and path_or_text.endswith(suffix)):
        path = Path(path_or_text)
        return path.read_text(), path.name, path
    return path_or_text, f"kernel{suffix}", None


@dataclass(frozen=True, slots=True)
class Kernel:
    """One ``.entry`` of a PTX module, ready to compile, disassemble and launch.

    Make one with :meth:`from_ptx`, :meth:`from_cuda` or :meth:`load`.

    Attributes
    ----------
    ptx : str
        The PTX module's text.
    entry : str
        The ``.entry``'s name (a C++ kernel's mangled name).
    module : Module
        The parsed PTX (:mod:`karyamorph.isa.ast`).
    filename : str
        The PTX's name in messages.
    spec : KernelSpec or None
        The spec it was loaded from (:meth:`load`): its sizes, launch and arguments.
    """

    ptx: str = field(repr=False)
    entry: str
    module: ast.Module = field(repr=False)
    filename: str = "kernel.ptx"
    spec: KernelSpec | None = field(default=None, repr=False)
    _cache: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_ptx(cls, path_or_text: str | Path, entry: str) -> Kernel:
        """The entry ``entry`` of PTX given as a file (a ``Path``, or a ``*.ptx`` name) or as text.

        Raises
        ------
        PtxError
            The PTX does not parse (with the line and a caret).
        SpecError
            The PTX has no ``.entry`` of that name (the message lists those it has).
        OSError
            The file cannot be read.
        """
        text, name, _ = _read(path_or_text, ".ptx")
        module = parse(text, name)
        try:
            module.entry(entry)
        except KeyError as exc:
            raise SpecError(f"{name}: entry", str(exc.args[0])) from None
        return cls(text, entry, module, name)

    @classmethod
    def from_cuda(
        cls,
        source: str | Path,
        entry: str,
        options: Sequence[str] = (),
        arch: Arch | str | None = None,
    ) -> Kernel:
        """The kernel ``entry`` of CUDA C++ source (a ``Path``, a ``*.cu`` name, or the text),
        compiled to PTX by nvcc for ``arch`` (default: the GPU's, else sm_120).

        ``entry`` is the function's name; a C++ (not ``extern "C"``) kernel is found by its
        mangled name, which :attr:`entry` then holds. ``options`` go to nvcc (``-DBLOCK=256``).

        Raises
        ------
        SpecError
            nvcc rejected the source (each error at its line), or no kernel or several are
            called ``entry``.
        ArchError, ToolchainError
            The target is unknown, or nvcc is missing.
        """
        text, name, path = _read(source, ".cu")
        folder = path.parent if path is not None else None
        cuda = CudaSource(text, str(path) if path else name, tuple(options), path, folder)
        target = check_arch(arch or default_arch(None, current_device()))
        ptx = compile_cuda(cuda, target, where=name)
        ptx_name = Path(name).with_suffix(".ptx").name
        module = parse(ptx, ptx_name)
        resolved = resolve_entry(entry, [f.name for f in module.entries], f"{name}: entry", cuda.name)
        return cls(ptx, resolved, module, ptx_name)

    @classmethod
    def load(cls, spec_path: str | Path, arch: Arch | str | None = None) -> Kernel:
        """The kernel of a spec file (``vadd.toml``); CUDA source is compiled for ``arch``.

        Raises
        ------
        SpecError, PtxError, ArchError, ToolchainError
            As :func:`karyamorph.harness.pipeline.prepare_spec`.
        """
        bound, module = load_bound(Path(spec_path), (), None if arch is None else Arch.parse(arch).name)
        spec = bound.spec
        return cls(spec.ptx, spec.entry, module, spec.ptx_name, spec)

    @property
    def function(self) -> ast.Function:
        """The parsed ``.entry``."""
        return self.module.entry(self.entry)

    @property
    def params(self) -> tuple[ast.Param, ...]:
        """The ``.entry``'s parameters, in order: name, PTX type, whether a ``.ptr``."""
        return self.function.params

    def target(self, arch: Arch | str | None = None) -> Arch:
        """``arch`` checked, else the PTX's ``.target`` (sm_120 when it names none)."""
        return check_arch(arch or default_arch(self.module, None))

    def compile(self, arch: Arch | str | None = None, extra_args: Sequence[str] = ()) -> Compiled:
        """Assemble with ptxas for ``arch`` (default: :meth:`target`); cached per target.

        Raises
        ------
        PtxasError
            ptxas rejected the PTX (at its line) or does not know the target.
        ToolchainError
            There is no ptxas.
        """
        target = self.target(arch)
        key = ("compile", target.name, tuple(extra_args))
        if key not in self._cache:
            assembly = assemble(
                self.ptx, target.name, discover(), extra_args=extra_args, filename=self.filename
            )
            fn = assembly.functions[self.entry]
            self._cache[key] = Compiled(
                assembly.arch or target.name, fn.registers, fn.spill_stores_bytes, fn.spill_loads_bytes,
                fn.shared_bytes, fn.stack_frame_bytes, fn.local_bytes, assembly.cubin, assembly.log,
            )  # fmt: skip
        compiled: Compiled = self._cache[key]
        return compiled

    def sass(self, arch: Arch | str | None = None) -> str:
        """The SASS nvdisasm reads from :meth:`compile`'s cubin, as text.

        Raises
        ------
        SassError
            Neither nvdisasm nor cuobjdump is there, or the tool failed.
        """
        return disassemble(self.compile(arch).cubin, discover()).text

    def interpret(
        self,
        grid: Dim3,
        block: Dim3,
        args: Mapping[str, Any],
        *,
        machine: Machine | None = None,
        shared_bytes: int = 0,
        seed: int = 0,
        randomize: bool = False,
        budget: ModelBudget | None = None,
    ) -> InterpResult:
        """Run one launch on the CPU model, every thread at once: :meth:`launch` without a GPU.

        Parameters
        ----------
        grid, block : int or sequence of int
            Blocks in the grid and threads in a block, (x[, y[, z]]).
        args : mapping of str to array or number
            By parameter name: a numpy array for a pointer (copied: a global allocation of its
            own), a number or numpy scalar for a value.
        machine : Machine, optional
            The machine model (default: :func:`karyamorph.machine` for :meth:`target`).
        shared_bytes : int
            Dynamic shared memory per block.
        seed, randomize : int, bool
            Run the warps between barriers in a random order drawn from ``seed``.
        budget : ModelBudget, optional
            What the model may spend on the launch.

        Returns
        -------
        InterpResult
            ``outputs`` (every array argument's final contents) and ``stats``.

        Raises
        ------
        UnmodeledError
            The kernel uses instructions ``machine`` lacks (all of them are named).
        ExecutionError, TooLargeError
            The kernel did something undefined, or the launch is over ``budget``.
        """
        launch = (dim3(grid, "grid"), dim3(block, "block"), shared_bytes)
        return interpret(
            self.module, self.entry, machine or ptx_machine(self.target().name), launch, args,
            randomize_order=randomize, seed=seed, budget=budget,
        )  # fmt: skip

    def check(
        self,
        grid: Dim3,
        block: Dim3,
        buffers: Mapping[str, int],
        scalars: Mapping[str, int | float] | None = None,
        *,
        machine: Machine | None = None,
        shared_bytes: int = 0,
        properties: Sequence[str] = ("bounds", "race", "barrier"),
        unroll: int = 8,
        budget_s: float | None = 30.0,
        strict: bool = False,
    ) -> list[Verdict]:
        """Prove or refute bounds, race and barrier properties of one launch with z3.

        Parameters
        ----------
        grid, block : int or sequence of int
            The launch.
        buffers : mapping of str to int
            Each pointer parameter's buffer size in bytes; each is an allocation of its own.
        scalars : mapping of str to number, optional
            Values of scalar parameters; one left out is free: its verdict holds for every value.
        machine : Machine, optional
            The machine model, whose scheduling applies (default: :func:`karyamorph.machine`).
        shared_bytes : int
            Dynamic shared memory per block.
        properties, unroll, budget_s, strict
            As :func:`karyamorph.check`.

        Returns
        -------
        list of Verdict
            One per property; a refuted one carries a witness (threads, address, PTX lines).

        Raises
        ------
        UnmodeledError
            The kernel uses instructions ``machine`` lacks.
        ValueError
            An unknown property or parameter name.
        """
        launch = (dim3(grid, "grid"), dim3(block, "block"), shared_bytes)
        return check_launch(
            self.module, self.entry, machine or ptx_machine(self.target().name), launch, dict(buffers),
            dict(scalars or {}), properties=tuple(properties), unroll=unroll, deadline_s=budget_s,
            strict=strict,
        )  # fmt: skip

    def launch(
        self,
        grid: Dim3,
        block: Dim3,
        args: Sequence[object],
        shared_bytes: int = 0,
        stream: Any = None,
    ) -> None:
        """Launch once on the current device, asynchronously, like cupy's ``RawKernel``.

        Parameters
        ----------
        grid, block : int or sequence of int
            Blocks in the grid and threads in a block, (x[, y[, z]]).
        args : sequence
            One per ``.entry`` parameter, in order: GPU arrays (torch tensors, cupy arrays,
            anything with ``__cuda_array_interface__``) for pointers, numbers or numpy scalars
            for values. Checked against the signature before any CUDA call.
        shared_bytes : int
            Dynamic shared memory per block.
        stream : cuda.core Stream or an object with ``__cuda_stream__``, optional
            Default: the device's default stream (torch's unless it was changed).

        Raises
        ------
        LaunchArgumentError
            An argument does not fit its parameter (named in the message).
        CudaError
            The driver refused to load or launch the kernel.
        """
        plan = self._cache.get(("arguments",))
        if plan is None:
            plan = self._cache[("arguments",)] = ArgumentPlan(self.function)
        params = plan.fill(args)
        # The same shape launched again reuses its checked dimensions (a launch's host time is
        # what an interactive loop pays).
        shape = ("dims", hashable(grid), hashable(block))
        dims = self._cache.get(shape)
        if dims is None:
            dims = self._cache[shape] = (*dim3(grid, "grid"), *dim3(block, "block"))
        device = launch_device()
        loaded = self._cache.get(("loaded", device.device_id))
        if loaded is None:
            loaded = self._cache[("loaded", device.device_id)] = self._load(device)
        allowed = ("shared", device.device_id, shared_bytes)
        if shared_bytes > DEFAULT_DYNAMIC_SHARED_LIMIT and allowed not in self._cache:
            allow_dynamic_shared(loaded.kernel, shared_bytes, device)
            self._cache[allowed] = True
        issue(loaded, dims, shared_bytes, stream_handle(stream, device), params, f"launching {self.entry}")

    def _load(self, device: Any) -> LoadedFunction:
        """The kernel compiled for ``device`` (or for the PTX's own target where that is an
        arch-specific one of this chip, such as sm_90a) and loaded in its primary context."""
        from cuda.core import ObjectCode

        device_arch = Arch.parse(f"sm_{device.arch}")
        ptx_arch = default_arch(self.module, None)
        same = ptx_arch.compute_capability == device_arch.compute_capability
        cubin = self.compile(ptx_arch if same else device_arch).cubin
        try:
            kernel = ObjectCode.from_cubin(cubin, name=f"{self.entry}.cubin").get_kernel(self.entry)
            return LoadedFunction(kernel, cu_function(kernel))
        except cuda_core_errors() as exc:
            raise as_cuda_error(exc, f"loading {self.entry}") from None


def load(spec_path: str | Path, arch: Arch | str | None = None) -> Kernel:
    """The kernel of a spec file: :meth:`Kernel.load`."""
    return Kernel.load(spec_path, arch)


def bind(
    spec_path: str | Path, sizes: Mapping[str, int] | None = None, arch: Arch | str | None = None
) -> BoundKernel:
    """The spec file's launch with every figure resolved to integers for ``sizes``.

    Parameters
    ----------
    spec_path : str or Path
        The spec (``vadd.toml``); its CUDA source, if it gives that, is compiled for ``arch``.
    sizes : mapping of str to int, optional
        Overrides of the spec's ``[sizes]``.
    arch : str, optional
        The target CUDA source is compiled for (default sm_120).

    Returns
    -------
    BoundKernel
        ``grid``, ``block``, ``shared_bytes``, each argument's ``shapes``, the ``scalars``, and
        ``cost_bytes`` and ``cost_flops`` from the spec's ``[cost]``; ``spec`` is the spec.

    Raises
    ------
    SpecError, PtxError, ArchError, ToolchainError
        The spec, a size, its PTX or the target cannot be used.
    """
    items = [f"{name}={value}" for name, value in (sizes or {}).items()]
    bound, _ = load_bound(Path(spec_path), items, None if arch is None else Arch.parse(arch).name)
    return bound
