"""Typed loader for verdicts.toml: the known checker verdicts and equivalences of the test kernels."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "verdicts.toml"

PROPERTIES = ("bounds", "race", "barrier")
VERDICTS = ("holds", "violated")
SCHEDULINGS = ("its", "lockstep")
INTERP = ("exact", "close", "schedule", "error", "none")
SPACES = ("global", "shared")

# The opcode a witness line may hold, per property: memory accesses for bounds and race
# (parameter loads never fault), barriers for barrier.
_LINE_KINDS = {
    "bounds": re.compile(r"^(ld|st|atom|red)\.(?!param)"),
    "race": re.compile(r"^(ld|st|atom|red)\.(?!param)"),
    "barrier": re.compile(r"^(bar|barrier)\."),
}
_GUARD = re.compile(r"^@!?%\w+\s+")


class ManifestError(ValueError):
    """verdicts.toml is malformed; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class Expected:
    """The known verdict of one property of one kernel.

    Attributes
    ----------
    verdict : str
        ``"holds"`` (must be proved, or proved up to k; never refuted) or ``"violated"``
        (must be refuted with a witness).
    lines : tuple of int
        PTX lines (1-based) a witness may name; each is a real violation. For a race, the
        lines of ``pairs``.
    pairs : tuple of (int, int)
        Race only: the racing accesses as unordered line pairs; a witness's pair is one of them.
    space : str or None
        ``"global"`` or ``"shared"``: where the faulty accesses go.
    buffers : tuple of str
        Kernel argument or ``.shared`` variable names the faulty accesses touch.
    notes : str
        Which threads and inputs make a witness.
    unknown : str
        A property that holds but lies past the two-thread abstraction (an index taken from an
        atomic's return value): a checker may answer ``unknown`` with this text in its reason.
    """

    verdict: str
    lines: tuple[int, ...] = ()
    pairs: tuple[tuple[int, int], ...] = ()
    space: str | None = None
    buffers: tuple[str, ...] = ()
    notes: str = ""
    unknown: str = ""

    @property
    def holds(self) -> bool:
        return self.verdict == "holds"

    def accepts_pair(self, a: int, b: int) -> bool:
        """True when the race witness naming lines ``a`` and ``b`` (either order) is a known pair."""
        return (a, b) in self.pairs or (b, a) in self.pairs


@dataclass(frozen=True, slots=True)
class KernelCase:
    """One test kernel: its spec file and the known verdict of each property.

    ``expected`` holds the verdicts under independent thread scheduling (sm_70+);
    ``lockstep`` only the properties whose verdict differs when warps run in lockstep.
    """

    name: str
    spec_path: Path
    expected: dict[str, Expected]
    lockstep: dict[str, Expected] = field(default_factory=dict)
    source: str = "hand"
    interp: str = "none"
    notes: str = ""

    def verdicts(self, scheduling: str = "its") -> dict[str, Expected]:
        """The expected verdict per property under ``"its"`` or ``"lockstep"`` scheduling."""
        if scheduling not in SCHEDULINGS:
            raise ValueError(f"unknown scheduling {scheduling!r} (expected one of: {', '.join(SCHEDULINGS)})")
        return self.expected if scheduling == "its" else {**self.expected, **self.lockstep}

    @property
    def ptx_path(self) -> Path:
        """The PTX file the spec names (read from the spec TOML, without the harness)."""
        doc = tomllib.loads(self.spec_path.read_text())
        return self.spec_path.parent / str(doc["kernel"]["ptx"])

    @property
    def violated(self) -> tuple[str, ...]:
        return tuple(p for p, e in self.expected.items() if not e.holds)


@dataclass(frozen=True, slots=True)
class EquivCase:
    """Two kernels that are (or are not) equivalent for all inputs.

    ``bound`` is, for an equivalent pair, the largest value of each spec size to prove it for;
    for a non-equivalent pair, the smallest size at which some input makes the outputs differ.
    """

    a: str
    b: str
    equivalent: bool
    bound: int
    notes: str = ""


@dataclass(frozen=True, slots=True)
class Manifest:
    """All cases of verdicts.toml."""

    kernels: tuple[KernelCase, ...]
    equiv: tuple[EquivCase, ...]

    def kernel(self, name: str) -> KernelCase:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(
            f"no kernel {name!r} in the manifest (have: {', '.join(k.name for k in self.kernels)})"
        )


def _get(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in table:
        raise ManifestError(f"{where}.{key}: missing")
    value = table[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ManifestError(f"{where}.{key}: expected {kind}, got {value!r}")
    return value


def _expected(raw: Any, where: str) -> Expected:
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: expected a table")
    verdict = _get(raw, "verdict", str, where)
    if verdict not in VERDICTS:
        raise ManifestError(f"{where}.verdict: {verdict!r} is not one of {', '.join(VERDICTS)}")
    pairs = tuple((int(p[0]), int(p[1])) for p in raw.get("pairs", ()))
    lines = tuple(int(n) for n in raw.get("lines", ())) or tuple(sorted({n for p in pairs for n in p}))
    space = raw.get("space")
    if space is not None and space not in SPACES:
        raise ManifestError(f"{where}.space: {space!r} is not one of {', '.join(SPACES)}")
    if verdict == "violated" and not lines:
        raise ManifestError(f"{where}: a violated property needs lines (or pairs for a race)")
    if verdict == "holds" and (lines or pairs):
        raise ManifestError(f"{where}: a property that holds has no witness lines")
    unknown = raw.get("unknown", "")
    if unknown and verdict != "holds":
        raise ManifestError(f"{where}.unknown: only a property that holds may be left unknown")
    return Expected(
        verdict, lines, pairs, space, tuple(raw.get("buffers", ())), raw.get("notes", ""), unknown
    )


def _kernel(raw: dict[str, Any], base: Path, where: str) -> KernelCase:
    name = _get(raw, "name", str, where)
    where = f"{where} ({name})"
    expected = {p: _expected(_get(raw, p, dict, where), f"{where}.{p}") for p in PROPERTIES}
    lockstep = {p: _expected(e, f"{where}.lockstep.{p}") for p, e in raw.get("lockstep", {}).items()}
    for p in lockstep:
        if p not in PROPERTIES:
            raise ManifestError(f"{where}.lockstep.{p}: unknown property")
    interp = raw.get("interp", "none")
    if interp not in INTERP:
        raise ManifestError(f"{where}.interp: {interp!r} is not one of {', '.join(INTERP)}")
    spec_path = base / _get(raw, "spec", str, where)
    if not spec_path.is_file():
        raise ManifestError(f"{where}.spec: no file {spec_path.name} beside the manifest")
    return KernelCase(
        name, spec_path, expected, lockstep, raw.get("source", "hand"), interp, raw.get("notes", "")
    )


def load_manifest(path: Path = MANIFEST) -> Manifest:
    """Load verdicts.toml.

    Raises
    ------
    ManifestError
        Naming the file, the entry and the key that is wrong.
    """
    doc = tomllib.loads(path.read_text())
    kernels = tuple(
        _kernel(raw, path.parent, f"{path.name}: kernel[{i}]") for i, raw in enumerate(doc.get("kernel", []))
    )
    names = {k.name for k in kernels}
    if len(names) != len(kernels):
        raise ManifestError(f"{path.name}: duplicate kernel names")
    equiv = []
    for i, raw in enumerate(doc.get("equiv", [])):
        where = f"{path.name}: equiv[{i}]"
        case = EquivCase(
            _get(raw, "a", str, where), _get(raw, "b", str, where),
            _get(raw, "equivalent", bool, where), _get(raw, "bound", int, where), raw.get("notes", ""),
        )  # fmt: skip
        for side in (case.a, case.b):
            if side not in names:
                raise ManifestError(f"{where}: unknown kernel {side!r}")
        equiv.append(case)
    return Manifest(kernels, tuple(equiv))


def line_problems(case: KernelCase) -> list[str]:
    """Witness lines of ``case`` that do not hold an instruction of their property's kind.

    An empty list means every listed line is a memory access (bounds, race) or a barrier
    (barrier) in the kernel's PTX file; it guards the manifest against edits of the PTX.
    """
    text = case.ptx_path.read_text().splitlines()
    problems = []
    expectations = [(f"{p}", e) for p, e in case.expected.items()]
    expectations += [(f"lockstep.{p}", e) for p, e in case.lockstep.items()]
    for key, exp in expectations:
        kind = _LINE_KINDS[key.rsplit(".", 1)[-1]]
        for line in exp.lines:
            if not 1 <= line <= len(text):
                problems.append(f"{case.name}.{key}: line {line} is past the end of {case.ptx_path.name}")
                continue
            instr = _GUARD.sub("", text[line - 1].strip())
            if not kind.match(instr):
                problems.append(f"{case.name}.{key}: line {line} of {case.ptx_path.name} is {instr!r}")
            elif exp.space is not None and f".{exp.space}" not in instr.split()[0]:
                problems.append(f"{case.name}.{key}: line {line} is not a .{exp.space} access: {instr!r}")
    return problems
