"""Checks a KernelSpec against its PTX: the ``.entry`` exists and its parameters fit the arguments."""

from __future__ import annotations

from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.spec import ArgSpec, KernelSpec, SpecError, struct_layout
from karyamorph.kernel.tensormap import TENSORMAP_ALIGN, TENSORMAP_BYTES

# Which spec dtype kinds a scalar .param type accepts: bit types take any kind of their width;
# nvcc declares C `int` as .u32 and `long` as .u64, so signed and unsigned integers mix.
_ACCEPTS = {"b": {"f", "s", "u"}, "u": {"s", "u"}, "s": {"s", "u"}, "f": {"f"}}


def check_signature(spec: KernelSpec, entry: ast.Function) -> None:
    """Raise :class:`SpecError` naming the spec key and the ``.param`` when they don't fit."""
    where = spec.source_path.name if spec.source_path else "<spec>"
    params = entry.params
    if len(spec.args) != len(params):
        have = ", ".join(f"{p.name} (.{p.type})" for p in params) or "none"
        raise SpecError(
            f"{where}: args",
            f"{len(spec.args)} argument(s) given but .entry {entry.name} has {len(params)} "
            f"parameter(s): {have}",
        )
    for i, (arg, param) in enumerate(zip(spec.args, params, strict=True)):
        problem = _mismatch(arg, param)
        if problem:
            raise SpecError(
                f"{where}: args[{i}] ({arg.name})",
                f"{problem}; .entry {entry.name} parameter {i} is '{_describe(param)}'",
            )


def param_kind(param: ast.Param) -> str:
    """What a ``.param`` of an entry passes: ``pointer`` (``.ptr``), ``tensormap`` (``.align 64
    .b8 name[128]``, a ``CUtensorMap`` by value), ``struct`` (another byte array, as nvcc passes
    a struct by value: :mod:`karyamorph.kernel.structs` lays out its fields) or ``scalar``."""
    if param.is_ptr:
        return "pointer"
    if is_tensormap_param(param):
        return "tensormap"
    return "struct" if param.dims else "scalar"


def is_tensormap_param(param: ast.Param) -> bool:
    """Whether ``param`` is declared as a ``CUtensorMap`` passed by value (``const
    __grid_constant__ CUtensorMap`` in CUDA C): ``.param .align 64 .b8 name[128]``."""
    return (
        param.type == "b8"
        and param.align == TENSORMAP_ALIGN
        and param.dims == (TENSORMAP_BYTES,)
        and not param.is_ptr
    )


def _mismatch(arg: ArgSpec, param: ast.Param) -> str | None:
    kind = param_kind(param)
    if arg.is_tensormap:
        if kind != "tensormap":
            return (
                f"{arg.name!r} has a tensormap, which passes a {TENSORMAP_BYTES}-byte CUtensorMap by "
                f"value: it needs a '.param .align {TENSORMAP_ALIGN} .b8 NAME[{TENSORMAP_BYTES}]' parameter"
            )
        return None
    if kind == "tensormap" and not arg.is_struct:
        what = f"a scalar ({arg.dtype.name})"
        if arg.is_pointer:
            what = f"role {arg.role!r} passes a 64-bit pointer"
        return (
            f"{what}, but the parameter is a CUtensorMap passed by value; give {arg.name!r} a "
            "tensormap table (box, swizzle) to pass a tensor map of the buffer"
        )
    if arg.is_struct:
        return struct_layout(arg).mismatch(param)
    if kind == "struct":
        return (
            f"the parameter is a struct of {param.size_bytes} bytes passed by value; state it as "
            'role = "struct" with its fields'
        )
    width = ast.type_bytes(param.type)
    if arg.is_pointer:
        if param.type.lstrip("busf") != "64" or param.type.startswith("f"):
            return f"role {arg.role!r} passes a 64-bit pointer, which does not fit a .{param.type} parameter"
        return None
    if param.is_ptr:
        return f"a scalar ({arg.dtype.name}) is given for a pointer parameter"
    if arg.dtype.bytes != width:
        return (
            f"dtype {arg.dtype.name} is {arg.dtype.bytes} bytes "
            f"but the parameter is .{param.type} ({width} bytes)"
        )
    kind = param.type[0]
    if arg.dtype.kind not in _ACCEPTS.get(kind, set()):
        return f"dtype {arg.dtype.name} does not match the parameter type .{param.type}"
    return None


def _describe(param: ast.Param) -> str:
    ptr = " .ptr" + (f" .{param.ptr_space}" if param.ptr_space else "") if param.is_ptr else ""
    align = f" .align {param.align}" if param.align is not None and not param.is_ptr else ""
    dims = "".join(f"[{d}]" for d in param.dims)
    return f".param{align} .{param.type}{ptr} {param.name}{dims}"


def prepare(spec: KernelSpec) -> ast.Module:
    """Parse the spec's PTX and check the spec against the entry's signature.

    Raises
    ------
    PtxSyntaxError
        Malformed PTX, with file:line:col.
    SpecError
        Entry not found or spec/signature mismatch, naming both sides; or a spec of CUDA
        source that is not compiled yet (the harness lowers it for a target first).
    """
    if spec.cuda is not None and not spec.ptx:
        raise SpecError(
            f"{spec.where}: {spec.cuda.key}",
            "CUDA source has no PTX until it is compiled for a target "
            "(karyamorph.harness.pipeline.prepare_spec does both)",
        )
    module = parse(spec.ptx, spec.ptx_name)
    try:
        entry = module.entry(spec.entry)
    except KeyError as exc:
        raise SpecError(f"{spec.where}: kernel.entry", f"{exc.args[0]} in {spec.ptx_name}") from None
    check_signature(spec, entry)
    return module
