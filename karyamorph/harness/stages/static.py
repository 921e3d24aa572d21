"""The ``static`` stage: theoretical occupancy and version compatibility, with no GPU needed."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from karyamorph.harness.stages.base import Context, Figure, StageResult, Status
from karyamorph.isa.availability import module_problems
from karyamorph.isa.versions import compatibility
from karyamorph.model.resources.occupancy import occupancy


class StaticStage:
    """Occupancy from the resource model and the PTX/toolchain/driver/arch compatibility check.

    Fails when the launch cannot fit on one SM (0 blocks) or when the versions cannot work
    together; warnings (for example a PTX version newer than the driver, compiled ahead of time
    by a newer ptxas) are reported but do not fail the stage.
    """

    name = "static"
    overlaps: tuple[str, ...] = ()

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        occ = r.data.get("occupancy")
        text = ""
        if occ:
            text = f"{occ['blocks_per_sm']} blk/SM, {occ['occupancy']:.0%} occ ({occ['limiter']})"
        problems = r.data.get("compatibility", [])
        if problems:
            text += f"; {len(problems)} version note(s)"
        return text

    def run(self, context: Context) -> StageResult:

        module = context.module
        assert module is not None
        spec = context.spec
        report = context.assembly.functions.get(context.entry) if context.assembly else None
        data: dict[str, Any] = {}
        figures: list[Figure] = []
        log: list[str] = []

        driver_cuda = context.device.cuda_driver_release if context.device is not None else None
        toolchain_cuda = getattr(context.toolchain, "cuda_release", None)
        problems = compatibility(module.version, module.arch, context.arch.name, toolchain_cuda, driver_cuda)
        # Instructions the file's own .version/.target cannot have, then those --arch cannot run.
        problems += module_problems(module)
        if context.arch.name != module.arch:
            seen = {p.message for p in problems}
            problems += [p for p in module_problems(module, context.arch.name) if p.message not in seen]
        data["compatibility"] = [{"severity": p.severity, "message": p.message} for p in problems]
        log.extend(f"{p.severity}: {p.message}" for p in problems)
        failed = any(p.severity == "error" for p in problems)

        bx, by, bz = context.kernel.block
        threads = bx * by * bz
        entry = module.entry(spec.entry)
        data["block_threads"] = threads
        for directive in ("maxntid", "reqntid"):
            limit = entry.attribute(directive)
            if limit:
                cap = 1
                for v in limit:
                    cap *= v
                if threads > cap or (directive == "reqntid" and threads != cap):
                    log.append(f"error: block of {threads} threads violates .{directive} {limit}")
                    failed = True

        if report is None:
            log.append("occupancy not computed: compile did not pass")
            data["occupancy"] = None
        else:
            occ = occupancy(
                context.arch.name,
                block_threads=threads,
                registers_per_thread=int(report.registers or 0),
                static_shared_bytes=int(report.shared_bytes),
                dynamic_shared_bytes=context.kernel.shared_bytes,
            )
            data["occupancy"] = _jsonable(asdict(occ))
            context.blocks_per_sm = occ.blocks_per_sm
            figures += [
                Figure("blocks_per_sm", occ.blocks_per_sm, "blocks"),
                Figure("warps_per_sm", occ.warps_per_sm, "warps"),
                Figure("occupancy", occ.occupancy, "fraction"),
            ]
            log.append(
                f"{occ.blocks_per_sm} blocks/SM, {occ.warps_per_sm} warps/SM, "
                f"occupancy {occ.occupancy:.0%}, limited by {occ.limiter}"
            )
            if occ.blocks_per_sm == 0:
                failed = True
        return StageResult(Status.FAIL if failed else Status.PASS, data, "\n".join(log), 0.0, tuple(figures))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)
