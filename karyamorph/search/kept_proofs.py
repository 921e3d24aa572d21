"""Rewrite proofs kept by content: a proved rewrite is not proved again.

A proof depends on the kernel's PTX and entry, its launch, arguments and check sizes, the
rewrite, the machine's arch, z3's time limit and the model's own code; the same inputs give the
same verdict. So a proved verdict is kept in the tool cache (``$KARYAMORPH_CACHE``, as the SASS
text is) under a hash of all of them, the model's source files included, and
``karyamorph model rewrites`` and ``search run --rewrites`` read it back. The proofs can be made
on one machine (a laptop, with no GPU) and the cache folder taken to the GPU host, where the
search then spends its time on the GPU. Only proofs are kept: a rejection is proved again, so
that its witness is always the model's own, fresh.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from karyamorph import __version__
from karyamorph.harness.tools.cache import read_cached, write_cached
from karyamorph.kernel.bound import bind
from karyamorph.kernel.spec import KernelSpec, SpecError
from karyamorph.model.rewrite import RewriteVerdict, prove
from karyamorph.model.rewrite.rewrite import Rewrite

KIND = "rewrite-proofs"
"""The cache's folder for the kept proofs."""
KEPT = "kept from an earlier proof of the same kernel, rewrite and model"
"""What a verdict read back says beside its reason."""


def prove_kept(
    spec: KernelSpec,
    rewrite: Rewrite,
    sizes: Mapping[str, int] | None = None,
    *,
    arch: str | None = None,
    timeout_ms: int = 20_000,
) -> RewriteVerdict:
    """:func:`~karyamorph.model.rewrite.prove`, or the same proof kept from an earlier call."""
    parts = _parts(spec, rewrite, sizes, arch, timeout_ms)
    text = None if parts is None else read_cached(KIND, parts)
    if text is not None:
        row = json.loads(text)
        sizes_at = tuple((str(k), int(v)) for k, v in row["sizes"])
        return RewriteVerdict(rewrite.name, True, f"{row['reason']}; {KEPT}", sizes_at, None, 0.0)
    verdict = prove(spec, rewrite, sizes, arch=arch, timeout_ms=timeout_ms)
    if verdict.proved and parts is not None:
        write_cached(KIND, parts, json.dumps({"reason": verdict.reason, "sizes": verdict.sizes}))
    return verdict


def _parts(
    spec: KernelSpec, rewrite: Rewrite, sizes: Mapping[str, int] | None, arch: str | None, timeout_ms: int
) -> list[str] | None:
    """Everything the proof depends on, or None where the spec does not bind (the proof then
    says why)."""
    try:
        bound = bind(spec, sizes=sizes)
    except SpecError:
        return None
    return [__version__, _model_digest(), rewrite.name, arch or "", str(timeout_ms), spec.ptx, spec.entry,
            repr(sorted(bound.sizes.items())), repr(spec.launch), repr(spec.args)]  # fmt: skip


@functools.cache
def _model_digest() -> str:
    """A hash of the model's, the PTX reader's and the spec binder's source: a change to any of
    them is a new model."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for package in ("model", "isa", "kernel"):
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()
