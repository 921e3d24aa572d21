"""The sass stage: disassemble the compiled cubin and report its instruction mix and line map."""

from __future__ import annotations

from typing import Any

from karyamorph.harness.stages.base import Context, Figure, StageResult, Status, timed
from karyamorph.harness.tools.nvdisasm import SassError, disassemble, instruction_mix, line_map
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover


class SassStage:
    """Disassemble ``context.cubin`` (left by the compile stage); leave ``context.ptx_lines``.

    The data hold the entry's static instruction count and mix (alignment padding left
    out), the full SASS text, and the PTX line -> SASS offsets map (empty when the cubin has
    no line information). Figures: ``sass_instructions`` and ``sass_op_<OPCODE>`` per base
    opcode.
    """

    name: str = "sass"
    overlaps: tuple[str, ...] = ("static", "model")
    """Stages the pipeline runs while this one works in a thread: nvdisasm costs a fixed ~0.3 s
    of CPU per new cubin, and these need nothing of its product (every other stage waits)."""

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        mix = r.data.get("mix", {})
        top = sorted(mix.items(), key=lambda kv: (-kv[1], kv[0]))[:4]
        return f"{r.data.get('instruction_count')} instrs; " + " ".join(f"{k}:{v}" for k, v in top)

    def run(self, context: Context) -> StageResult:
        """Disassemble the cubin; skip when the compile stage left none."""
        return timed(lambda: self._run(context))

    def _run(self, context: Context) -> StageResult:
        cubin = context.cubin
        if cubin is None:
            return StageResult.skip("compile did not pass")
        try:
            toolchain: Toolchain = context.toolchain or discover()
            dis = disassemble(cubin, toolchain)
        except (ToolchainError, SassError) as err:
            return StageResult(Status.ERROR, {}, str(err))
        function = context.entry if context.entry in dis.functions else None
        mix = instruction_mix(dis, function)
        count = sum(mix.values())
        lines = line_map(dis, function)
        context.ptx_lines = lines
        data: dict[str, Any] = {
            "function": function,
            "arch": dis.arch,
            "tool": dis.tool,
            "instruction_count": count,
            "mix": mix,
            "lines": lines,
            "functions": {name: len(fn.body) for name, fn in dis.functions.items()},
            "text": dis.text,
        }
        figures = (
            Figure("sass_instructions", float(count)),
            *(Figure(f"sass_op_{op}", float(n)) for op, n in mix.items()),
        )
        return StageResult(Status.PASS, data, "", figures=figures)
