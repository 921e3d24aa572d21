"""BoundKernel: a KernelSpec with every launch figure resolved once to integers and checked.

A spec holds expressions over named sizes; binding evaluates them all for one set of sizes (and,
optionally, one target), checks them against the launch limits and the argument types, and
returns a read-only object that the model, the stages and the GPU worker take as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from karyamorph.isa.arch import Arch
from karyamorph.kernel.expressions import ExpressionError, evaluate
from karyamorph.kernel.limits import launch_limits
from karyamorph.kernel.spec import ArgSpec, KernelSpec, SpecError
from karyamorph.kernel.tensormap import TensorMap, TensorMapError

Dim3 = tuple[int, int, int]

MAX_BUFFER_BYTES = 1 << 40
"""A buffer larger than this (1 TiB) fits no GPU: a spec asking for one is an error."""
MAX_SIZE = 1 << 62
"""Sizes must lie in ``[-2**62, 2**62]``."""


@dataclass(frozen=True, slots=True)
class BoundKernel:
    """A spec bound to sizes: grid, block, shared bytes, shapes and scalars as plain numbers.

    Attributes
    ----------
    spec : KernelSpec
        The spec it came from (PTX, entry, argument roles and dtypes, reference).
    sizes : dict
        The sizes every figure was evaluated with.
    grid, block : tuple of 3 int
        Launch dimensions.
    shared_bytes : int
        Dynamic shared memory per block.
    shapes : dict
        Shape of every pointer argument, by argument name.
    scalars : dict
        Value of every scalar argument, by argument name.
    cost_bytes, cost_flops : float or None
        The ``[cost]`` figures, when the spec gives them.
    arch : Arch or None
        The target the launch limits were checked for (None: the loosest limits of any arch).
    tensormaps : dict
        The tensor map of every buffer the kernel takes as one (``tensormap`` in the spec), by
        argument name.
    """

    spec: KernelSpec
    sizes: dict[str, int]
    grid: Dim3
    block: Dim3
    shared_bytes: int
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    scalars: dict[str, int | float] = field(default_factory=dict)
    cost_bytes: float | None = None
    cost_flops: float | None = None
    arch: Arch | None = None
    tensormaps: dict[str, TensorMap] = field(default_factory=dict)

    @property
    def entry(self) -> str:
        """The ``.entry`` to launch."""
        return self.spec.entry

    @property
    def args(self) -> tuple[ArgSpec, ...]:
        """The spec's arguments, in ``.entry`` parameter order."""
        return self.spec.args

    @property
    def launch(self) -> tuple[Dim3, Dim3, int]:
        """``(grid, block, shared_bytes)``, the form the model's interpreter and checker take."""
        return (self.grid, self.block, self.shared_bytes)

    @property
    def threads(self) -> int:
        """Threads in the whole launch."""
        return math.prod(self.grid) * math.prod(self.block)

    def elements(self, arg: ArgSpec) -> int:
        """Elements of a pointer argument's buffer."""
        return math.prod(self.shapes[arg.name])

    def buffer_bytes(self, arg: ArgSpec) -> int:
        """Bytes of a pointer argument's buffer."""
        return self.elements(arg) * arg.dtype.bytes


def bind(
    spec: KernelSpec, arch: Arch | str | None = None, sizes: Mapping[str, int] | None = None
) -> BoundKernel:
    """Resolve every expression of ``spec`` for ``sizes`` (default: the spec's own) and check it.

    Parameters
    ----------
    spec : KernelSpec
        The kernel.
    arch : Arch, str or None
        Check the launch against this target's limits (shared memory differs per arch).
    sizes : mapping, optional
        Overrides of the spec's sizes (``--size n=4096``); each must name an existing size.

    Raises
    ------
    SpecError
        Naming the file and the field (``vadd.toml: launch.block[0]``) and what is wrong.
    """
    where = spec.where
    merged = dict(spec.sizes)
    for name, value in (sizes or {}).items():
        if name not in merged:
            have = ", ".join(sorted(merged)) or "none"
            raise SpecError(f"{where}: sizes", f"unknown size {name!r} (sizes defined: {have})")
        merged[name] = value
    for name, value in merged.items():
        if isinstance(value, bool) or not isinstance(value, int) or not -MAX_SIZE <= value <= MAX_SIZE:
            raise SpecError(f"{where}: sizes.{name}", f"sizes must be integers within +-2**62, got {value!r}")
    target = Arch.parse(arch) if arch is not None else None
    limits = launch_limits(target)

    def ev(expr: str | int | float, key: str, integer: bool = True) -> int | float:
        try:
            return evaluate(expr, merged, integer=integer)
        except ExpressionError as exc:
            raise SpecError(f"{where}: {key}", str(exc)) from None

    grid = _dim3(spec.launch.grid, "launch.grid", limits.max_grid, ev, where)
    block = _dim3(spec.launch.block, "launch.block", limits.max_block, ev, where)
    if math.prod(block) > limits.max_threads_per_block:
        raise SpecError(
            f"{where}: launch.block",
            f"{block[0]} x {block[1]} x {block[2]} = {math.prod(block)} threads per block; the "
            f"limit is {limits.max_threads_per_block}",
        )
    shared = int(ev(spec.launch.shared_bytes, "launch.shared_bytes"))
    if not 0 <= shared <= limits.max_shared_bytes:
        on = f" on {target}" if target else " on any arch"
        raise SpecError(
            f"{where}: launch.shared_bytes",
            f"{shared} bytes of dynamic shared memory; must be 0 to {limits.max_shared_bytes}{on}",
        )
    shapes: dict[str, tuple[int, ...]] = {}
    scalars: dict[str, int | float] = {}
    tensormaps: dict[str, TensorMap] = {}
    # A struct's fields are bound like arguments, by their names.
    keyed = [(f"args[{i}].fields[{j}]" if a.is_struct else f"args[{i}]", f)
             for i, a in enumerate(spec.args) for j, f in enumerate(a.fields or (a,))]  # fmt: skip
    for key, arg in keyed:
        if arg.is_pointer:
            shape = tuple(int(ev(s, f"{key}.shape[{k}]")) for k, s in enumerate(arg.shape))
            if any(d < 0 for d in shape):
                raise SpecError(f"{where}: {key}.shape", f"shape {shape} has a negative extent")
            if math.prod(shape) * arg.dtype.bytes > MAX_BUFFER_BYTES:
                raise SpecError(
                    f"{where}: {key}.shape",
                    f"{arg.name} would take {math.prod(shape) * arg.dtype.bytes} bytes, more than any "
                    f"GPU has (limit {MAX_BUFFER_BYTES})",
                )
            shapes[arg.name] = shape
            if arg.tensormap is not None:
                tensormaps[arg.name] = tensor_map(arg, shape, merged, f"{where}: {key}.tensormap")
        else:
            assert arg.value is not None
            scalar = ev(arg.value, f"{key}.value", integer=arg.dtype.kind != "f")
            _check_scalar(arg, scalar, f"{where}: {key}.value")
            scalars[arg.name] = scalar
    cost_b = _cost(spec.cost_bytes, "cost.bytes", ev, where)
    cost_f = _cost(spec.cost_flops, "cost.flops", ev, where)
    return BoundKernel(spec, merged, grid, block, shared, shapes, scalars, cost_b, cost_f, target, tensormaps)


def tensor_map(
    arg: ArgSpec, shape: tuple[int, ...], sizes: Mapping[str, int], where: str = "<spec>: tensormap"
) -> TensorMap:
    """The tensor map of buffer ``arg`` (which has a ``tensormap`` table) of ``shape``, its box
    evaluated over ``sizes``.

    Raises
    ------
    SpecError
        At ``where`` (``mm.toml: args[0].tensormap``): a box expression that does not evaluate,
        or fields ``cuTensorMapEncodeTiled`` would refuse
        (:meth:`karyamorph.kernel.tensormap.TensorMap.problem`), naming the argument.
    """
    tm = arg.tensormap
    if tm is None:
        raise ValueError(f"{arg.name} has no tensormap table")
    box: list[int] = []
    for k, expr in enumerate(tm.box):
        try:
            box.append(int(evaluate(expr, sizes, integer=True)))
        except ExpressionError as exc:
            raise SpecError(f"{where}.box[{k}]", str(exc)) from None
    try:
        return TensorMap.of_array(
            shape, arg.dtype.bytes, tuple(box), swizzle=tm.swizzle, oob=tm.oob,
            is_float=arg.dtype.kind == "f", element_strides=tm.element_strides,
        )  # fmt: skip
    except TensorMapError as exc:
        fields = f"{arg.name} (shape {list(shape)}, box {box})"
        raise SpecError(where, f"{fields}: {exc} (indices count from the innermost dimension)") from None


def _dim3(
    exprs: tuple[str | int, ...],
    key: str,
    most: Dim3,
    ev: Callable[[str | int, str], int | float],
    where: str,
) -> Dim3:
    values = [int(ev(e, f"{key}[{i}]")) for i, e in enumerate(exprs)]
    values += [1] * (3 - len(values))
    for i, (v, top) in enumerate(zip(values, most, strict=True)):
        if not 1 <= v <= top:
            raise SpecError(f"{where}: {key}[{i}]", f"evaluates to {v}; it must be 1 to {top}")
    return (values[0], values[1], values[2])


def _cost(
    expr: str | int | float | None,
    key: str,
    ev: Callable[[str | int | float, str, bool], int | float],
    where: str,
) -> float | None:
    if expr is None:
        return None
    value = float(ev(expr, key, False))
    if value < 0:
        raise SpecError(f"{where}: {key}", f"{expr!r} evaluates to {value:g}; a cost must be >= 0")
    return value


def _check_scalar(arg: ArgSpec, value: int | float, where: str) -> None:
    name = arg.dtype.name
    if arg.dtype.kind != "f":
        lo, hi = arg.dtype.int_range
        if not lo <= value <= hi:
            raise SpecError(where, f"{arg.name} = {value} does not fit {name} ({lo} to {hi})")
    elif not math.isfinite(value) or abs(value) > arg.dtype.float_max:
        raise SpecError(where, f"{arg.name} = {value} is not a finite {name}")
