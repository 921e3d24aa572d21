"""A SIMT machine declared in Python: warp size, memory spaces, registers, scheduling, ISA, resources."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from karyamorph.kernel.limits import ArchResources, resources_for
from karyamorph.model.semantics.instruction import Instr

SCHEDULING = ("lockstep", "its")


@dataclass(frozen=True, slots=True)
class Machine:
    """The machine a kernel runs on, in the model.

    Attributes
    ----------
    name : str
        A label (``"ptx-reduced"``).
    instructions : tuple of Instr
        The instruction set; a later declaration of the same name and types shadows an earlier
        one (see :meth:`with_instructions`).
    arch : str
        The target whose resources (registers, shared memory, ...) apply.
    warp_size : int
        Threads per warp (32 on every NVIDIA GPU).
    scheduling : {"lockstep", "its"}
        ``lockstep``: the threads of a warp execute together and reconverge at the immediate
        post-dominator (pre-Volta); ``its``: independent thread scheduling (sm_70+), where
        warp-synchronous code without ``__syncwarp`` may interleave.
    memory_spaces : tuple of str
        State spaces the machine models.
    register_types : tuple of str
        Types a ``.reg`` declaration may have.
    special_registers : tuple of str
        Special registers readable with ``mov`` (``%tid`` has ``.x .y .z``).
    """

    name: str
    instructions: tuple[Instr, ...]
    arch: str = "sm_80"
    warp_size: int = 32
    scheduling: str = "its"
    memory_spaces: tuple[str, ...] = ("param", "global", "shared", "local", "const")
    register_types: tuple[str, ...] = (
        "pred", "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
        "f16", "bf16", "f32", "f64",
    )  # fmt: skip
    special_registers: tuple[str, ...] = ("tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid")
    _by_opcode: dict[str, tuple[Instr, ...]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scheduling not in SCHEDULING:
            raise ValueError(f"scheduling must be one of {SCHEDULING}, got {self.scheduling!r}")
        if self.warp_size < 1:
            raise ValueError(f"warp_size must be >= 1, got {self.warp_size}")
        index: dict[str, list[Instr]] = {}
        for ins in self.instructions:
            index.setdefault(ins.opcode, []).append(ins)
        # Later declarations are tried first, so that a user's declaration overrides a shipped one.
        self._by_opcode.clear()
        self._by_opcode.update({k: tuple(reversed(v)) for k, v in index.items()})

    def candidates(self, opcode: str) -> tuple[Instr, ...]:
        """Declarations with this first word, the most recently added first."""
        return self._by_opcode.get(opcode, ())

    def resources(self) -> ArchResources:
        """The SM resources of :attr:`arch` (from :mod:`karyamorph.kernel.limits`)."""
        return resources_for(self.arch)

    def with_instructions(self, *instrs: Instr) -> Machine:
        """A copy with more instructions (shadowing earlier declarations of the same forms)."""
        return replace(self, instructions=(*self.instructions, *instrs), _by_opcode={})

    def with_options(self, **changes: object) -> Machine:
        """A copy with other attributes (``arch="sm_90"``, ``scheduling="lockstep"``)."""
        return replace(self, _by_opcode={}, **changes)  # type: ignore[arg-type]

    @property
    def opcodes(self) -> tuple[str, ...]:
        return tuple(sorted({i.name for i in self.instructions}))
