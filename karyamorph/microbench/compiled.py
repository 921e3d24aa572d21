"""Assemble microbenchmark modules (in parallel) and read what ptxas made of each timed region.

A *timed region* is the code between two consecutive reads of the SM clock (``%clock64``; SASS
``CS2R Rn, SR_CLOCKLO`` on sm_90 and sm_120). Every benchmark kernel brackets each loop it
times with such a pair, so the opcode mix of a region says what the hardware really ran: 64
``FFMA`` for 64 ``fma.rn.f32``, or 32 ``IADD3`` for 64 ``add.u32`` (ptxas fused pairs), or
nothing at all where ptxas folded the code away. Those mixes are recorded with every figure.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from karyamorph.harness.tools.nvdisasm import Disassembly, SassError, disassemble
from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.isa.printer import format_module

CLOCK_OPERAND = "SR_CLOCKLO"


@dataclass(frozen=True, slots=True)
class Compiled:
    """One assembled module: its cubin, each entry's registers and the SASS of its timed regions.

    ``regions[entry][i]`` is the opcode mix (base opcode -> count) between the entry's clock
    reads ``2i`` and ``2i + 1``. ``error`` holds ptxas's message when it refused the module
    (then ``cubin`` is empty), or the disassembler's when only the SASS is missing.
    """

    key: str
    ptx: str
    arch: str
    cubin: bytes = b""
    registers: dict[str, int] = field(default_factory=dict)
    regions: dict[str, tuple[dict[str, int], ...]] = field(default_factory=dict)
    error: str | None = None
    diagnostics: tuple[tuple[int | None, str], ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.cubin)


def merge(modules: list[ast.Module]) -> ast.Module:
    """One module holding the entries of ``modules`` (same target; the highest ``.version``)."""
    if not modules:
        raise ValueError("merge needs at least one module")
    version = max((m.version for m in modules), key=lambda v: tuple(int(x) for x in v.split(".")))
    items = tuple(item for m in modules for item in m.items)
    return ast.Module(version, modules[0].target, modules[0].address_size, items)


def assembly_arch(module: ast.Module | str, arch: str) -> str:
    """The target ptxas assembles ``module`` for: its own ``.target`` where that is the
    architecture-specific variant of ``arch`` (``sm_90a`` in a session for ``sm_90``: ``wgmma``
    exists only there), else ``arch``."""
    if isinstance(module, ast.Module):
        targets = module.target
    else:
        line = next((t for t in module.splitlines() if t.strip().startswith(".target")), "")
        targets = tuple(t.strip() for t in line.strip()[len(".target") :].split(","))
    own = Arch.parse(targets[0]) if targets and targets[0] else None
    base = Arch.parse(arch)
    if own is not None and own.suffix == "a" and own.base == base.base:
        return own.name
    return arch


def timed_regions(dis: Disassembly, entry: str) -> tuple[dict[str, int], ...]:
    """The opcode mix between each pair of consecutive clock reads of ``entry`` (reads 0-1, 2-3, ...)."""
    fn = dis.functions.get(entry)
    if fn is None:
        return ()
    body = fn.body
    reads = [i for i, ins in enumerate(body) if CLOCK_OPERAND in ins.operands]
    out = []
    for first, last in zip(reads[0::2], reads[1::2], strict=False):
        out.append(dict(Counter(ins.base for ins in body[first + 1 : last])))
    return tuple(out)


def _one(key: str, ptx: str, arch: str, toolchain: Toolchain, sass: bool) -> Compiled:
    try:
        asm = assemble(ptx, arch, toolchain, lineinfo=False, filename=f"{key}.ptx")
    except PtxasError as exc:
        located = tuple((d.line, d.message) for d in exc.diagnostics if d.severity in ("error", "fatal"))
        return Compiled(key, ptx, arch, error=str(exc), diagnostics=located)
    registers = {name: r.registers or 0 for name, r in asm.functions.items()}
    if not sass:
        return Compiled(key, ptx, arch, asm.cubin, registers)
    try:
        dis = disassemble(asm.cubin, toolchain, with_lineinfo=True)
    except SassError as exc:
        return Compiled(key, ptx, arch, asm.cubin, registers, error=f"no SASS: {exc}")
    regions = {name: timed_regions(dis, name) for name in asm.functions}
    return Compiled(key, ptx, arch, asm.cubin, registers, regions)


def compile_modules(
    modules: Mapping[str, ast.Module | str],
    arch: str,
    toolchain: Toolchain,
    *,
    jobs: int | None = None,
    sass: bool = True,
) -> dict[str, Compiled]:
    """Assemble every module for ``arch`` (an ``sm_90a`` module for ``sm_90a`` in a session for
    ``sm_90``: :func:`assembly_arch`; ``jobs`` ptxas/nvdisasm processes at a time) and, with
    ``sass``, disassemble it to record each entry's timed regions. A refused module comes back
    with ``error`` set, never as an exception."""
    texts = {k: m if isinstance(m, str) else format_module(m) for k, m in modules.items()}
    targets = {k: assembly_arch(m, arch) for k, m in modules.items()}
    workers = max(1, jobs or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {k: pool.submit(_one, k, text, targets[k], toolchain, sass) for k, text in texts.items()}
        return {k: f.result() for k, f in futures.items()}


def entry_lines(ptx: str) -> dict[str, tuple[int, int]]:
    """Each ``.entry``'s first and last line in ``ptx`` (1-based), to map a ptxas error to its entry."""
    starts: list[tuple[int, str]] = []
    lines = ptx.splitlines()
    for number, text in enumerate(lines, start=1):
        words = text.replace("(", " ").split()
        if ".entry" in words:
            starts.append((number, words[words.index(".entry") + 1]))
    out = {}
    for i, (first, name) in enumerate(starts):
        last = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines)
        out[name] = (first, last)
    return out
