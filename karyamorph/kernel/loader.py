"""Read a KernelSpec from TOML (schema v1): every field type-checked, every expression bound once."""

from __future__ import annotations

import keyword
import re
import tomllib
from pathlib import Path
from typing import Any

from karyamorph.kernel.bound import bind
from karyamorph.kernel.reference import check_reference
from karyamorph.kernel.search_table import SEARCH_KEYS, kernel_tuner_block, searched
from karyamorph.kernel.source import SOURCES, kernel_source, string_field
from karyamorph.kernel.source import cuda_source as cuda_source  # read by what shows stored runs
from karyamorph.kernel.spec import (
    DTYPES,
    INITS,
    ROLES,
    SPEC_VERSION,
    STRUCT,
    ArgSpec,
    Init,
    KernelSpec,
    Launch,
    LaunchRanges,
    Reference,
    SpecError,
    TensorMapSpec,
    struct_layout,
)
from karyamorph.kernel.structs import StructLayoutError
from karyamorph.kernel.tensormap import MAX_ELEMENT_STRIDE, MAX_RANK, OOB_FILLS, SWIZZLES

MAX_SPEC_BYTES = 1 << 20
"""Largest spec file read, in characters."""

KEYS: dict[str, tuple[str, ...]] = {
    "": ("version", "kernel", "sizes", "launch", "args", "reference", "check", "cost", "search"),
    "kernel": ("ptx", "source", "cu", "cuda", "options", "entry"),
    "sizes": (),
    "launch": ("grid", "block", "shared_bytes", "cluster"),
    "args": ("name", "role", "dtype", "shape", "init", "value", "fields", "tensormap"),
    "args.tensormap": ("box", "swizzle", "oob", "element_strides"),
    "reference": ("torch", "python"),
    "check": ("atol", "rtol", "sizes", "launch", "block", "block_multiple", "grid"),
    "cost": ("bytes", "flops"),
    "search": SEARCH_KEYS,
}
"""Every key the loader reads, by table (``""``: the top level; ``args``: each ``[[args]]``;
``args.tensormap``: an argument's ``tensormap`` table).
``[sizes]`` takes any names: each key is a size."""

# The PTX grammar's identifier (isa/ptx.lark): an entry name outside it cannot be in the PTX.
_PTX_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")

_INIT_RE = re.compile(r"^\s*randint\s*\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)\s*$")


def _parse_init(text: Any, where: str) -> Init:
    if not isinstance(text, str):
        raise SpecError(where, f"init must be a string, got {text!r}")
    m = _INIT_RE.match(text)
    if m:
        return Init("randint", int(m.group(1)), int(m.group(2)))
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


def _cluster(value: Any, where: str) -> tuple[int, int, int] | None:
    """``[launch] cluster``: 1-3 positive integers (a cluster's shape is fixed, not an expression)."""
    if value is None:
        return None
    dims = _dims(value, where, 1, 3)
    if any(isinstance(v, str) or v < 1 for v in dims):
        raise SpecError(where, f"expected 1 to 3 positive integers, got {value!r}")
    x, y, z = (*(int(v) for v in dims), 1, 1)[:3]
    return (x, y, z)


def _table(doc: dict[str, Any], key: str, where: str, required: bool = True) -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        if required:
            raise SpecError(where, f"missing [{key}] table")
        return {}
    if not isinstance(value, dict):
        raise SpecError(where, f"[{key}] must be a table")
    return value


def _unknown_keys(table: dict[str, Any], section: str, where: str) -> None:
    allowed = set(KEYS[section])
    extra = sorted(set(table) - allowed)
    if extra:
        raise SpecError(where, f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})")


def _name(name: Any, where: str, what: str) -> str:
    """A size or argument name: expressions and the torch reference must be able to spell it."""
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise SpecError(where, f"expected an identifier ({what} name), got {name!r}")
    if keyword.iskeyword(name):
        raise SpecError(where, f"{name!r} is a Python keyword, which no expression can name")
    return name


def spec_from_dict(
    doc: dict[str, Any], base: Path | None = None, name: str = "<spec>", text: str = ""
) -> KernelSpec:
    """Build a KernelSpec from a parsed TOML document; relative paths resolve against ``base``.

    Every key is checked here, its type and its range, and every expression is bound once
    (:func:`karyamorph.kernel.bound.bind`), so that a spec that loads can run.

    Raises
    ------
    SpecError
        Naming the spec and the key (``vadd.toml: args[1].init``) and what is wrong.
    """
    _unknown_keys(doc, "", name)
    version = doc.get("version", SPEC_VERSION)
    if isinstance(version, bool) or not isinstance(version, int):
        raise SpecError(f"{name}: version", f"expected the integer {SPEC_VERSION}, got {version!r}")
    if version != SPEC_VERSION:
        raise SpecError(
            f"{name}: version", f"spec version {version!r} is not supported (this is {SPEC_VERSION})"
        )
    kernel = _table(doc, "kernel", name)
    _unknown_keys(kernel, "kernel", f"{name}: [kernel]")
    given = {key: string_field(kernel, key, f"{name}: kernel.{key}") for key in SOURCES}
    entry = string_field(kernel, "entry", f"{name}: kernel.entry")
    if entry is None:
        raise SpecError(f"{name}: kernel.entry", "missing the name of the .entry to run")
    if not _PTX_NAME.match(entry):
        raise SpecError(f"{name}: kernel.entry", f"{entry!r} is not a PTX name ([A-Za-z_$][A-Za-z0-9_$]*)")
    ptx, ptx_path, cuda = kernel_source(kernel, given, base, name)

    sizes = _table(doc, "sizes", name, required=False)
    for k, v in sizes.items():
        _name(k, f"{name}: sizes.{k}", "a size")
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(f"{name}: sizes.{k}", f"sizes must be integers, got {v!r}")

    launch_t = _table(doc, "launch", name)
    _unknown_keys(launch_t, "launch", f"{name}: [launch]")
    # Kernel Tuner's block_size_x (y, z) parameters are the block a launch does not name.
    block = launch_t["block"] if "block" in launch_t else kernel_tuner_block(doc.get("search"))
    for key, value in (("grid", launch_t.get("grid")), ("block", block)):
        if value is None:
            raise SpecError(f"{name}: launch.{key}", "missing")
    shared = launch_t.get("shared_bytes", 0)
    if isinstance(shared, bool) or not isinstance(shared, int | str):
        raise SpecError(
            f"{name}: launch.shared_bytes", f"expected an integer or an expression, got {shared!r}"
        )
    launch = Launch(
        _dims(launch_t["grid"], f"{name}: launch.grid", 1, 3),
        _dims(block, f"{name}: launch.block", 1, 3),
        shared,
        _cluster(launch_t.get("cluster"), f"{name}: launch.cluster"),
    )

    raw_args = doc.get("args", [])
    if not isinstance(raw_args, list):
        raise SpecError(f"{name}: args", "use [[args]] tables, one per .entry parameter")
    args = tuple(_arg(a, f"{name}: args[{i}]") for i, a in enumerate(raw_args))
    seen: set[str] = set()  # what the reference may name: a struct's fields, not the struct
    taken: set[str] = set()
    for i, a in enumerate(args):
        keyed = [(f"args[{i}].name", a)] + [
            (f"args[{i}].fields[{j}].name", f) for j, f in enumerate(a.fields)
        ]
        for key, f in keyed:
            if f.name in taken:
                raise SpecError(f"{name}: {key}", f"duplicate argument name {f.name!r}")
            taken.add(f.name)
            if not f.is_struct:
                seen.add(f.name)

    ref_t = _table(doc, "reference", name, required=False)
    _unknown_keys(ref_t, "reference", f"{name}: [reference]")
    reference = Reference(
        string_field(ref_t, "torch", f"{name}: reference.torch"),
        string_field(ref_t, "python", f"{name}: reference.python"),
    )
    check_reference(reference, [*sizes, *seen], name)
    check = _table(doc, "check", name, required=False)
    _unknown_keys(check, "check", f"{name}: [check]")
    for key, value in check.items():
        if key in _LAUNCH_KEYS:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
            raise SpecError(f"{name}: check.{key}", f"expected a number >= 0, got {value!r}")
    check_sizes = _check_sizes(check.get("sizes", []), sizes, f"{name}: check.sizes")
    cost = _table(doc, "cost", name, required=False)
    _unknown_keys(cost, "cost", f"{name}: [cost]")
    for key, value in cost.items():
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise SpecError(f"{name}: cost.{key}", f"expected a number or an expression, got {value!r}")

    spec = KernelSpec(
        ptx=ptx, entry=entry, sizes=dict(sizes), launch=launch, args=args, reference=reference,
        atol=check.get("atol"), rtol=check.get("rtol"), check_sizes=check_sizes, cost_bytes=cost.get("bytes"),
        cost_flops=cost.get("flops"), ptx_path=ptx_path, check_launch=_launch_ranges(check, f"{name}: check"),
        source_path=(base / name) if base is not None and name != "<spec>" else None, cuda=cuda, text=text,
    )  # fmt: skip
    if "search" in doc:  # the spec runs as its baseline configuration; the table makes the others
        spec = searched(spec, doc["search"], name)
    # Bind once now, so that a typo, a value out of range or a launch beyond every arch's limits
    # is reported before anything runs; the same for every size the correctness stage also checks.
    bind(spec)
    for i, other in enumerate(check_sizes):
        try:
            bind(spec, sizes=other)
        except SpecError as exc:
            where = f"{name}: check.sizes[{i}]"
            raise SpecError(where, f"the spec does not bind at {other}: {exc}") from None
    return spec


# ``[check]`` keys that are not tolerances.
_LAUNCH_KEYS = ("sizes", "launch", "block", "block_multiple", "grid")


def _launch_ranges(check: dict[str, Any], where: str) -> LaunchRanges:
    """``[check] launch``, ``block``, ``block_multiple``, ``grid``: the launches the model stage
    proves the kernel for."""
    mode = check.get("launch", "spec")
    if mode not in ("spec", "any"):
        raise SpecError(f"{where}.launch", f'expected "spec" or "any", got {mode!r}')
    default = LaunchRanges()
    block = _range(check.get("block", list(default.block)), f"{where}.block")
    raw_grid = check.get("grid", list(default.grid or ()))
    grid = None if raw_grid == "launch" else _range(raw_grid, f"{where}.grid", '"launch" or ')
    multiple = check.get("block_multiple", 1)
    if isinstance(multiple, bool) or not isinstance(multiple, int) or multiple < 1:
        raise SpecError(f"{where}.block_multiple", f"expected an integer >= 1, got {multiple!r}")
    try:
        return LaunchRanges(mode, block, multiple, grid)
    except ValueError as exc:
        raise SpecError(where, str(exc)) from None


def _range(raw: Any, where: str, other: str = "") -> tuple[int, int]:
    ok = isinstance(raw, list) and len(raw) == 2 and all(type(x) is int for x in raw)
    if not ok or not 1 <= raw[0] <= raw[1]:
        raise SpecError(where, f"expected {other}[lo, hi] with 1 <= lo <= hi, got {raw!r}")
    return raw[0], raw[1]


def _check_sizes(raw: Any, sizes: dict[str, Any], where: str) -> tuple[dict[str, int], ...]:
    """``[check] sizes``: a list of tables, each giving some sizes other values."""
    if not isinstance(raw, list):
        raise SpecError(where, f"expected a list of tables such as [{{ n = 4099 }}], got {raw!r}")
    out: list[dict[str, int]] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not entry:
            example = "{ n = 4099 }"
            raise SpecError(f"{where}[{i}]", f"expected a table of sizes such as {example}, got {entry!r}")
        for key, value in entry.items():
            if key not in sizes:
                have = ", ".join(sorted(sizes)) or "none"
                raise SpecError(f"{where}[{i}].{key}", f"unknown size {key!r} (sizes defined: {have})")
            if isinstance(value, bool) or not isinstance(value, int):
                raise SpecError(f"{where}[{i}].{key}", f"expected an integer, got {value!r}")
        out.append(dict(entry))
    return tuple(out)


def _arg(raw: Any, where: str, field: bool = False) -> ArgSpec:
    if not isinstance(raw, dict):
        raise SpecError(where, "each [[args]] entry must be a table")
    _unknown_keys(raw, "args", where)
    name = _name(raw.get("name"), f"{where}.name", "an argument")
    role = raw.get("role")
    if role == STRUCT and not field:
        return _struct(raw, name, where)
    if role not in ROLES:
        roles = ", ".join(ROLES if field else (*ROLES, STRUCT))
        raise SpecError(f"{where}.role", f"unknown role {role!r} (expected one of: {roles})")
    if "fields" in raw:
        raise SpecError(f"{where}.fields", f"only a struct argument has fields, {name!r} is {role!r}")
    if "tensormap" in raw and (role == "scalar" or field):
        what = "a struct's field" if field else "a scalar"
        raise SpecError(f"{where}.tensormap", f"only a buffer has a tensor map, {name!r} is {what}")
    dtype_name = raw.get("dtype")
    if not isinstance(dtype_name, str) or dtype_name not in DTYPES:
        raise SpecError(
            f"{where}.dtype", f"unknown dtype {dtype_name!r} (expected one of: {', '.join(DTYPES)})"
        )
    dtype = DTYPES[dtype_name]
    if role == "scalar":
        if "value" not in raw:
            raise SpecError(f"{where}.value", f"scalar argument {name!r} needs a value")
        if "shape" in raw or "init" in raw:
            raise SpecError(where, f"scalar argument {name!r} takes value, not shape/init")
        value = raw["value"]
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise SpecError(f"{where}.value", f"expected a number or an expression, got {value!r}")
        return ArgSpec(name, role, dtype, value=value)
    if "value" in raw:
        raise SpecError(f"{where}.value", f"pointer argument {name!r} takes shape and init, not value")
    if "shape" not in raw:
        raise SpecError(f"{where}.shape", f"pointer argument {name!r} needs a shape")
    shape = _dims(raw["shape"], f"{where}.shape", 1, 8)
    init = _parse_init(raw.get("init", _default_init(role, dtype.kind)), f"{where}.init")
    problem = init.problem(dtype)
    if problem:
        raise SpecError(f"{where}.init", problem)
    tensormap = None
    if "tensormap" in raw:
        tensormap = _tensormap(raw["tensormap"], len(shape), dtype.kind, f"{where}.tensormap")
    return ArgSpec(name, role, dtype, shape, init, tensormap=tensormap)


def _tensormap(raw: Any, rank: int, kind: str, where: str) -> TensorMapSpec:
    """A buffer's ``tensormap`` table: the box (one entry a shape dimension), swizzle, fill and
    element strides. What needs the sizes (the box's values, the byte strides) is checked when
    the spec is bound (:func:`karyamorph.kernel.bound.tensor_map`)."""
    if not isinstance(raw, dict):
        raise SpecError(where, f"expected a table such as {{ box = [64, 32], swizzle = 128 }}, got {raw!r}")
    _unknown_keys(raw, "args.tensormap", where)
    if not 1 <= rank <= MAX_RANK:
        raise SpecError(where, f"a tensor map has 1 to {MAX_RANK} dimensions, the shape has {rank}")
    swizzle = raw.get("swizzle", 0)
    if type(swizzle) is not int or swizzle not in SWIZZLES:
        spans = ", ".join(map(str, SWIZZLES))
        raise SpecError(f"{where}.swizzle", f"expected one of {spans} (bytes; 0: none), got {swizzle!r}")
    oob = raw.get("oob", "zero")
    if oob not in OOB_FILLS:
        raise SpecError(f"{where}.oob", f"expected one of {', '.join(map(repr, OOB_FILLS))}, got {oob!r}")
    if oob == "nan" and kind != "f":
        raise SpecError(f"{where}.oob", "a NaN fill needs a floating-point dtype")
    strides = raw.get("element_strides")
    if strides is not None:
        ok = isinstance(strides, list) and all(type(e) is int for e in strides)
        if not ok or not all(1 <= e <= MAX_ELEMENT_STRIDE for e in strides):
            raise SpecError(
                f"{where}.element_strides", f"expected integers 1 to {MAX_ELEMENT_STRIDE}, got {strides!r}"
            )
        if len(strides) != rank:
            raise SpecError(f"{where}.element_strides", f"{len(strides)} entries, the shape has {rank}")
        strides = tuple(strides)
    if "box" not in raw:
        raise SpecError(f"{where}.box", "missing: the elements one copy moves along each dimension")
    box = _dims(raw["box"], f"{where}.box", 1, MAX_RANK)
    if len(box) != rank:
        raise SpecError(f"{where}.box", f"box has {len(box)} dimensions, the shape {rank}")
    return TensorMapSpec(box, swizzle, oob, strides)


def _struct(raw: dict[str, Any], name: str, where: str) -> ArgSpec:
    """A struct passed by value: ``fields``, a list of argument tables (buffers and scalars)."""
    raw_fields = raw.get("fields")
    if not isinstance(raw_fields, list) or not raw_fields:
        raise SpecError(f"{where}.fields", f"struct argument {name!r} needs a list of field tables")
    fields = tuple(_arg(f, f"{where}.fields[{j}]", field=True) for j, f in enumerate(raw_fields))
    extra = sorted(set(raw) - {"name", "role", "fields"})
    if "tensormap" in extra:
        raise SpecError(f"{where}.tensormap", f"only a buffer has a tensor map, {name!r} is a struct")
    if extra:
        raise SpecError(where, f"struct argument {name!r} takes fields, not {', '.join(extra)}")
    arg = ArgSpec(name, STRUCT, DTYPES["u8"], fields=fields)
    try:
        struct_layout(arg)
    except StructLayoutError as exc:
        raise SpecError(f"{where}.fields", str(exc)) from None
    return arg


def _default_init(role: str, kind: str) -> str:
    """The init of a buffer that names none: ``zeros`` for ``out``, else ``randn`` for a float
    dtype and ``randint(0, 100)`` for an integer one (``kind`` is the dtype's f, s or u)."""
    return "zeros" if role == "out" else "randn" if kind == "f" else "randint(0, 100)"


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
    except UnicodeDecodeError as exc:
        raise SpecError(p.name, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise SpecError(str(path), f"cannot read the spec: {exc.strerror}") from None
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(p.name, f"spec is {len(text)} characters long (at most {MAX_SPEC_BYTES})")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(p.name, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise SpecError(p.name, "not valid TOML: nested too deeply") from None
    return spec_from_dict(doc, p.parent, p.name, text)
