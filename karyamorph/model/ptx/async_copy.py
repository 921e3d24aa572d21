"""Asynchronous copies from global to shared memory: ``cp.async`` and its groups.

PTX ISA, "Data Movement and Conversion Instructions: cp.async", ``cp.async.commit_group`` and
``cp.async.wait_group`` / ``cp.async.wait_all``:

- ``cp.async.{ca,cg}.shared{::cta}.global{.L2::cache_hint} [dst], [src], cp-size{, src-size}
  {, cache-policy}`` starts a copy of
  ``cp-size`` bytes (4, 8 or 16; ``.cg`` only 16) to shared ``dst``; with ``src-size`` only
  that many bytes are read from global ``src`` and the rest of ``dst`` is filled with zeros;
- ``cp.async.commit_group`` closes the copies started since the last commit into a group (an
  empty group if there were none);
- ``cp.async.wait_group N`` waits until at most the ``N`` most recent groups are pending (all
  older ones complete); ``cp.async.wait_all`` is ``commit_group`` then ``wait_group 0``.

When the copy happens is the driver's: the interpreter performs a copy when its thread waits for
it (:mod:`karyamorph.model.interp.asynccopy`); the checker's race encoding lets it land anywhere
between the ``cp.async`` and the wait that completes its group
(:mod:`karyamorph.model.check.asynccopies`).
"""

from __future__ import annotations

from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import U32

COPY_SIZES = (4, 8, 16)


def _copy(x: Exec[V, B]) -> None:
    n = x.imm("size")
    if n not in COPY_SIZES:
        raise x.operand_error(f"cp-size must be 4, 8 or 16, got {n}")
    if x.mod("cache") == "cg" and n != 16:
        raise x.operand_error(f"cp.async.cg copies 16 bytes, got cp-size {n}")
    dst, dst_bits = x.address("dst")
    src, src_bits = x.address("src")
    # With .L2::cache_hint the last operand is a cache policy (a hint the model ignores).
    sized = x.has("policy") if x.mod("hint") else x.has("src_size")
    src_n = x.read("src_size", U32) if sized else x.D.const(n, 32)
    x.copy_async(dst, dst_bits, src, src_bits, n, src_n)


def _commit(x: Exec[V, B]) -> None:
    x.async_group("commit")


def _wait(x: Exec[V, B]) -> None:
    x.async_group("wait", x.imm("n"))


def _wait_all(x: Exec[V, B]) -> None:
    x.async_group("wait_all")


ASYNC_COPY: tuple[Instr, ...] = (
    Instr("cp", (), (Slot("dst", "addr"), Slot("src", "addr"), Slot("size", "imm"),
                     Slot("src_size", optional=True), Slot("policy", optional=True)), _copy,
          {"cache": ("ca", "cg"), "dst_space": ("shared", "shared::cta"), "src_space": ("global",),
           "hint": ("L2::cache_hint",)},
          required=("cache", "dst_space", "src_space"), fixed=("async",), ntypes=0, kind="memory",
          min_ptx="7.0", min_target="sm_80",
          doc="start a copy of 4/8/16 bytes from global to shared memory (zero-filled past src-size)"),
    Instr("cp", (), (), _commit, fixed=("async", "commit_group"), ntypes=0, kind="memory",
          min_ptx="7.0", min_target="sm_80", doc="close the started copies into a group"),
    Instr("cp", (), (Slot("n", "imm"),), _wait, fixed=("async", "wait_group"), ntypes=0, kind="memory",
          min_ptx="7.0", min_target="sm_80", doc="wait until at most N committed groups are pending"),
    Instr("cp", (), (), _wait_all, fixed=("async", "wait_all"), ntypes=0, kind="memory",
          min_ptx="7.0", min_target="sm_80", doc="commit, then wait for every copy"),
)  # fmt: skip
