"""``karyamorph model rewrites SPEC``: the rewrites of a kernel's own PTX the catalogue proposes,
each proved or rejected (with its witness) by the model at the spec's check sizes; no GPU."""

from __future__ import annotations

from pathlib import Path

import click

from karyamorph.cli.options import format_option, size_option, spec_argument, split_names
from karyamorph.cli.output import echo, friendly_errors


@click.command("rewrites")
@spec_argument
@size_option
@click.option("--only", default=None, metavar="NAMES",
              help="Comma-separated rewrites to prove (default: every one the kernel admits).")  # fmt: skip
@click.option("--arch", default=None, help="Target CUDA source is compiled for and the model's limits "
              "(default: the PTX's .target, else sm_120).")  # fmt: skip
@click.option("--timeout", "timeout_s", default=20.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds z3 may spend on one query.")  # fmt: skip
@format_option("table", "json")
@friendly_errors
def rewrites_command(
    spec_path: str, sizes: tuple[str, ...], only: str | None, arch: str | None, timeout_s: float, fmt: str
) -> None:
    """List the rewrites SPEC's kernel admits (cache operators, performance directives, unroll
    pragmas, block size), each proved equivalent to the original by the model, or rejected with
    the witness. The sizes are the spec's check sizes (those of fewest threads), or the spec's
    own with --size overrides."""
    from karyamorph.harness.session import load_bound, size_overrides
    from karyamorph.isa.arch import Arch
    from karyamorph.kernel.bound import bind
    from karyamorph.kernel.spec import SpecError
    from karyamorph.model.rewrite import REWRITES, block_fixed, candidates, rewrite_named
    from karyamorph.search.kept_proofs import prove_kept
    from karyamorph.search.templates.from_spec import model_sizes
    from karyamorph.table import table

    kernel, _ = load_bound(Path(spec_path), (), arch)
    spec = kernel.spec
    at = {**spec.sizes, **size_overrides(sizes)} if sizes else model_sizes(spec)
    bind(spec, sizes=at)  # a size override that does not bind is the user's error, said as such
    proposed = candidates(spec, at, fixed=block_fixed(spec))
    wanted = split_names(only)
    if wanted:  # proved as named, proposed or not (one that changes nothing says so)
        try:
            proposed = tuple(rewrite_named(n) for n in wanted)
        except KeyError as exc:
            known = ", ".join((*REWRITES, "ld.nc:BUFFER"))
            raise SpecError("--only", f"no rewrite named {exc.args[0]} (known: {known})") from None
    machine_arch = Arch.parse(arch).canonical.base.name if arch else None  # else the PTX's .target
    limit = int(timeout_s * 1000)
    verdicts = [prove_kept(spec, r, at, arch=machine_arch, timeout_ms=limit) for r in proposed]
    if fmt == "json":
        rows = [{**v.as_dict(), "changes": r.changes, "condition": r.condition}
                for r, v in zip(proposed, verdicts, strict=True)]  # fmt: skip
        echo({"spec": spec.where, "sizes": at, "rewrites": rows})
        return
    lines = [
        [v.rewrite, "proved" if v.proved else "rejected", r.changes,
         v.reason + (f"; witness: {v.witness}" if v.witness is not None else "")]
        for r, v in zip(proposed, verdicts, strict=True)
    ]  # fmt: skip
    sized = ", ".join(f"{k}={v}" for k, v in at.items())
    title = f"{spec.where}: {len(verdicts)} rewrite(s) at {sized}"
    columns = ["rewrite", "verdict", "changes", "proof or witness"]
    echo(table(columns, lines, title=title, no_wrap=["rewrite"]))
