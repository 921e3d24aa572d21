"""KernelSpec: what to run (PTX, entry, args, launch, reference, tolerances), loaded from TOML."""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.harness.expressions import ExpressionError, evaluate

SPEC_VERSION = 1
ROLES = ("in", "out", "inout", "scalar")
INITS = ("randn", "rand", "zeros", "ones", "arange", "randint")


@dataclass(frozen=True, slots=True)
class DType:
    """An element type of a spec argument: its name, size and kind (f, s, u)."""

    name: str
    bytes: int
    kind: str


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("f16", 2, "f"), DType("bf16", 2, "f"), DType("f32", 4, "f"), DType("f64", 8, "f"),
        DType("s8", 1, "s"), DType("u8", 1, "u"), DType("s16", 2, "s"), DType("u16", 2, "u"),
        DType("s32", 4, "s"), DType("u32", 4, "u"), DType("s64", 8, "s"), DType("u64", 8, "u"),
    )
}  # fmt: skip


class SpecError(ValueError):
    """A KernelSpec that cannot be used; ``where`` is ``file: key`` (``vadd.toml: args[1].dtype``)."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class Init:
    """How a buffer is filled: ``randn``, ``rand``, ``zeros``, ``ones``, ``arange``, ``randint(lo, hi)``."""

    kind: str
    low: int = 0
    high: int = 0


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """One kernel argument, in ``.entry`` parameter order."""

    name: str
    role: str
    dtype: DType
    shape: tuple[str | int, ...] = ()
    init: Init = Init("zeros")
    value: str | int | float | None = None

    @property
    def is_pointer(self) -> bool:
        return self.role != "scalar"


@dataclass(frozen=True, slots=True)
class Launch:
    """Grid and block (1-3 expressions each) and dynamic shared memory in bytes."""

    grid: tuple[str | int, ...]
    block: tuple[str | int, ...]
    shared_bytes: str | int = 0


@dataclass(frozen=True, slots=True)
class Reference:
    """The expected outputs: a torch expression over arg names, or ``module:function``."""

    torch: str | None = None
    python: str | None = None


@dataclass(frozen=True, slots=True)
class KernelSpec:
    """Everything needed to run one kernel. Build with :func:`load_spec` or directly.

    Attributes
    ----------
    ptx : str
        The PTX source text.
    entry : str
        The ``.entry`` to launch.
    sizes : dict
        Named integers usable in every expression.
    ptx_path : Path or None
        Where the PTX came from (for messages); None when inline.
    source_path : Path or None
        The TOML file, when loaded from one.
    """

    ptx: str
    entry: str
    sizes: dict[str, int]
    launch: Launch
    args: tuple[ArgSpec, ...]
    reference: Reference = Reference()
    atol: float | None = None
    rtol: float | None = None
    cost_bytes: str | int | None = None
    cost_flops: str | int | None = None
    ptx_path: Path | None = None
    source_path: Path | None = None
    text: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        return self.source_path.stem if self.source_path else self.entry

    @property
    def ptx_name(self) -> str:
        return str(self.ptx_path.name) if self.ptx_path else f"{self.name}.ptx"

    @property
    def spec_hash(self) -> str:
        return hashlib.sha256((self.text or repr(self)).encode()).hexdigest()[:16]

    def grid(self) -> tuple[int, int, int]:
        return _dim3(self.launch.grid, self.sizes, "launch.grid", self._where())

    def block(self) -> tuple[int, int, int]:
        return _dim3(self.launch.block, self.sizes, "launch.block", self._where())

    def shared_bytes(self) -> int:
        return int(_eval(self.launch.shared_bytes, self.sizes, f"{self._where()}: launch.shared_bytes"))

    def shape(self, arg: ArgSpec) -> tuple[int, ...]:
        i = self.args.index(arg)
        return tuple(
            int(_eval(s, self.sizes, f"{self._where()}: args[{i}].shape[{k}]"))
            for k, s in enumerate(arg.shape)
        )

    def scalar_value(self, arg: ArgSpec) -> int | float:
        i = self.args.index(arg)
        assert arg.value is not None
        return _eval(arg.value, self.sizes, f"{self._where()}: args[{i}].value", arg.dtype.kind != "f")

    def cost(self) -> tuple[float | None, float | None]:
        """(bytes moved, flops) from the ``[cost]`` expressions, when given."""
        where = self._where()
        b = None if self.cost_bytes is None else _eval(self.cost_bytes, self.sizes, f"{where}: cost.bytes")
        f = None if self.cost_flops is None else _eval(self.cost_flops, self.sizes, f"{where}: cost.flops")
        return (None if b is None else float(b), None if f is None else float(f))

    def _where(self) -> str:
        return str(self.source_path.name) if self.source_path else "<spec>"


def _eval(text: str | int | float, sizes: dict[str, int], where: str, integer: bool = True) -> int | float:
    try:
        return evaluate(text, sizes, integer=integer)
    except ExpressionError as exc:
        raise SpecError(where, str(exc)) from None


def _dim3(exprs: tuple[str | int, ...], sizes: dict[str, int], key: str, where: str) -> tuple[int, int, int]:
    vals = [int(_eval(e, sizes, f"{where}: {key}[{i}]")) for i, e in enumerate(exprs)]
    for i, v in enumerate(vals):
        if v < 1:
            raise SpecError(f"{where}: {key}[{i}]", f"evaluates to {v}; launch dimensions must be >= 1")
    vals += [1] * (3 - len(vals))
    return (vals[0], vals[1], vals[2])


_INIT_RE = re.compile(r"^\s*randint\s*\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)\s*$")


def _parse_init(text: Any, where: str) -> Init:
    if not isinstance(text, str):
        raise SpecError(where, f"init must be a string, got {text!r}")
    m = _INIT_RE.match(text)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if hi <= lo:
            raise SpecError(where, f"randint({lo}, {hi}) needs lo < hi")
        return Init("randint", lo, hi)
    if text.strip() in INITS and text.strip() != "randint":
        return Init(text.strip())
    raise SpecError(
        where, f"unknown init {text!r} (expected one of: {', '.join(INITS[:-1])}, randint(lo, hi))"
    )


def _dims(value: Any, where: str, lo: int, hi: int) -> tuple[str | int, ...]:
    if isinstance(value, int | str):
        value = [value]
    if not isinstance(value, list) or not lo <= len(value) <= hi:
        raise SpecError(where, f"expected a list of {lo} to {hi} integers or expressions, got {value!r}")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise SpecError(where, f"expected an integer or an expression, got {v!r}")
    return tuple(value)


def _table(doc: dict[str, Any], key: str, where: str, required: bool = True) -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        if required:
            raise SpecError(where, f"missing [{key}] table")
        return {}
    if not isinstance(value, dict):
        raise SpecError(where, f"[{key}] must be a table")
    return value


def _unknown_keys(table: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise SpecError(where, f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})")


def spec_from_dict(
    doc: dict[str, Any], base: Path | None = None, name: str = "<spec>", text: str = ""
) -> KernelSpec:
    """Build a KernelSpec from a parsed TOML document; relative paths resolve against ``base``."""
    _unknown_keys(doc, {"kernel", "sizes", "launch", "args", "reference", "check", "cost", "version"}, name)
    version = doc.get("version", SPEC_VERSION)
    if version != SPEC_VERSION:
        raise SpecError(
            f"{name}: version", f"spec version {version!r} is not supported (this is {SPEC_VERSION})"
        )
    kernel = _table(doc, "kernel", name)
    _unknown_keys(kernel, {"ptx", "source", "entry"}, f"{name}: [kernel]")
    entry = kernel.get("entry")
    if not isinstance(entry, str) or not entry:
        raise SpecError(f"{name}: kernel.entry", "missing the name of the .entry to run")
    ptx_path: Path | None = None
    if "source" in kernel and "ptx" in kernel:
        raise SpecError(f"{name}: [kernel]", "give either ptx (a file) or source (inline PTX), not both")
    if "source" in kernel:
        ptx = str(kernel["source"])
    elif "ptx" in kernel:
        ptx_path = Path(kernel["ptx"])
        if base is not None and not ptx_path.is_absolute():
            ptx_path = base / ptx_path
        try:
            ptx = ptx_path.read_text()
        except FileNotFoundError:
            raise SpecError(f"{name}: kernel.ptx", f"PTX file not found: {ptx_path}") from None
        except OSError as exc:
            raise SpecError(f"{name}: kernel.ptx", f"cannot read {ptx_path}: {exc.strerror}") from None
    else:
        raise SpecError(f"{name}: [kernel]", 'missing ptx = "file.ptx" or source = """..."""')

    sizes = _table(doc, "sizes", name, required=False)
    for k, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(f"{name}: sizes.{k}", f"sizes must be integers, got {v!r}")

    launch_t = _table(doc, "launch", name)
    _unknown_keys(launch_t, {"grid", "block", "shared_bytes"}, f"{name}: [launch]")
    for key in ("grid", "block"):
        if key not in launch_t:
            raise SpecError(f"{name}: launch.{key}", "missing")
    launch = Launch(
        _dims(launch_t["grid"], f"{name}: launch.grid", 1, 3),
        _dims(launch_t["block"], f"{name}: launch.block", 1, 3),
        launch_t.get("shared_bytes", 0),
    )

    raw_args = doc.get("args", [])
    if not isinstance(raw_args, list):
        raise SpecError(f"{name}: args", "use [[args]] tables, one per .entry parameter")
    args = tuple(_arg(a, f"{name}: args[{i}]") for i, a in enumerate(raw_args))
    seen: set[str] = set()
    for i, a in enumerate(args):
        if a.name in seen:
            raise SpecError(f"{name}: args[{i}].name", f"duplicate argument name {a.name!r}")
        seen.add(a.name)

    ref_t = _table(doc, "reference", name, required=False)
    _unknown_keys(ref_t, {"torch", "python"}, f"{name}: [reference]")
    reference = Reference(ref_t.get("torch"), ref_t.get("python"))
    if reference.python is not None and ":" not in reference.python:
        raise SpecError(f"{name}: reference.python", f"expected 'module:function', got {reference.python!r}")
    check = _table(doc, "check", name, required=False)
    _unknown_keys(check, {"atol", "rtol"}, f"{name}: [check]")
    cost = _table(doc, "cost", name, required=False)
    _unknown_keys(cost, {"bytes", "flops"}, f"{name}: [cost]")

    spec = KernelSpec(
        ptx=ptx, entry=entry, sizes=dict(sizes), launch=launch, args=args, reference=reference,
        atol=check.get("atol"), rtol=check.get("rtol"), cost_bytes=cost.get("bytes"),
        cost_flops=cost.get("flops"), ptx_path=ptx_path,
        source_path=(base / name) if base is not None and name != "<spec>" else None, text=text,
    )  # fmt: skip
    # Evaluate every expression once now, so that a typo is reported before anything runs.
    spec.grid()
    spec.block()
    spec.shared_bytes()
    for a in args:
        spec.shape(a) if a.is_pointer else spec.scalar_value(a)
    spec.cost()
    return spec


def _arg(raw: Any, where: str) -> ArgSpec:
    if not isinstance(raw, dict):
        raise SpecError(where, "each [[args]] entry must be a table")
    _unknown_keys(raw, {"name", "role", "dtype", "shape", "init", "value"}, where)
    name = raw.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise SpecError(f"{where}.name", f"expected an identifier, got {name!r}")
    role = raw.get("role")
    if role not in ROLES:
        raise SpecError(f"{where}.role", f"unknown role {role!r} (expected one of: {', '.join(ROLES)})")
    dtype_name = raw.get("dtype")
    if dtype_name not in DTYPES:
        raise SpecError(
            f"{where}.dtype", f"unknown dtype {dtype_name!r} (expected one of: {', '.join(DTYPES)})"
        )
    dtype = DTYPES[dtype_name]
    if role == "scalar":
        if "value" not in raw:
            raise SpecError(f"{where}.value", f"scalar argument {name!r} needs a value")
        if "shape" in raw or "init" in raw:
            raise SpecError(where, f"scalar argument {name!r} takes value, not shape/init")
        return ArgSpec(name, role, dtype, value=raw["value"])
    if "value" in raw:
        raise SpecError(f"{where}.value", f"pointer argument {name!r} takes shape and init, not value")
    if "shape" not in raw:
        raise SpecError(f"{where}.shape", f"pointer argument {name!r} needs a shape")
    shape = _dims(raw["shape"], f"{where}.shape", 1, 8)
    default_init = "zeros" if role == "out" else "randn" if dtype.kind == "f" else "randint(0, 100)"
    return ArgSpec(name, role, dtype, shape, _parse_init(raw.get("init", default_init), f"{where}.init"))


def load_spec(path: str | Path) -> KernelSpec:
    """Load a KernelSpec from a TOML file.

    Raises
    ------
    SpecError
        Naming the file and the key (``vadd.toml: args[1].dtype: unknown dtype 'f33'``).
    """
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise SpecError(str(path), "spec file not found") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(p.name, f"not valid TOML: {exc}") from None
    return spec_from_dict(doc, p.parent, p.name, text)
