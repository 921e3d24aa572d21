"""KernelSpec -> TOML text that :func:`karyamorph.kernel.loader.load_spec` reads back to an equal spec.

A generated spec (a search's winner, a form on a page) is written as the same TOML a person
writes: ``[kernel]``, ``[sizes]``, ``[launch]``, ``[[args]]``, ``[reference]``, ``[check]``,
``[cost]``. Strings are written as JSON strings, which are valid TOML basic strings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from karyamorph.kernel.spec import ArgSpec, Init, KernelSpec, LaunchRanges, TensorMapSpec

Scalar = str | int | float | bool
Value = Scalar | Sequence["Value"] | Mapping[str, "Value"]


def _value(v: Value) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    return "[" + ", ".join(_value(x) for x in v) + "]"


Items = Mapping[str, Value | None]


def _table(name: str, items: Items, array: bool = False) -> list[str]:
    rows = [f"{k} = {_value(v)}" for k, v in items.items() if v is not None]
    if not rows and not array:
        return []
    return [f"[[{name}]]" if array else f"[{name}]", *rows, ""]


def _init(init: Init) -> str:
    return f"randint({init.low}, {init.high})" if init.kind == "randint" else init.kind


def _arg(arg: ArgSpec) -> dict[str, Value | None]:
    if arg.is_struct:  # its fields as inline tables, each written as an argument is
        fields = [{k: v for k, v in _arg(f).items() if v is not None} for f in arg.fields]
        return {"name": arg.name, "role": arg.role, "fields": fields}
    if not arg.is_pointer:
        return {"name": arg.name, "role": arg.role, "dtype": arg.dtype.name, "value": arg.value}
    return {"name": arg.name, "role": arg.role, "dtype": arg.dtype.name, "shape": list(arg.shape),
            "init": _init(arg.init), "tensormap": _tensormap(arg.tensormap)}  # fmt: skip


def _tensormap(tm: TensorMapSpec | None) -> dict[str, Value] | None:
    """A buffer's ``tensormap`` inline table, its defaults left out."""
    if tm is None:
        return None
    table: dict[str, Value] = {"box": list(tm.box)}
    if tm.swizzle:
        table["swizzle"] = tm.swizzle
    if tm.oob != "zero":
        table["oob"] = tm.oob
    if tm.element_strides is not None:
        table["element_strides"] = list(tm.element_strides)
    return table


def _kernel(spec: KernelSpec, source_file: str) -> dict[str, Value | None]:
    """``[kernel]``: the PTX file, or for a spec of CUDA source not yet lowered, the ``.cu`` file
    and nvcc's options."""
    if spec.cuda is None or spec.ptx:
        return {"ptx": source_file, "entry": spec.entry}
    return {"cu": source_file, "entry": spec.entry, "options": list(spec.cuda.options) or None}


def _launch_ranges(r: LaunchRanges) -> dict[str, Value | None]:
    """The ``[check]`` launch keys that differ from their defaults."""
    d = LaunchRanges()
    return {
        "launch": r.mode if r.mode != d.mode else None,
        "block": list(r.block) if r.block != d.block else None,
        "block_multiple": r.block_multiple if r.block_multiple != d.block_multiple else None,
        "grid": ("launch" if r.grid is None else list(r.grid)) if r.grid != d.grid else None,
    }


def spec_toml(spec: KernelSpec, ptx_file: str, header: str = "") -> str:
    """The TOML of ``spec`` with its PTX in ``ptx_file`` (a path relative to the TOML file).

    A spec of CUDA source that has no PTX yet (not lowered for a target) names ``ptx_file`` as
    its ``cu`` file instead, with its nvcc options; a lowered one is written as its PTX.

    Parameters
    ----------
    spec : KernelSpec
    ptx_file : str
        Where the PTX text (or the CUDA source) is written beside the spec (see :func:`write_spec`).
    header : str
        Comment lines put first (each line gets ``# ``).
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines += ["", *_table("kernel", _kernel(spec, ptx_file))]
    lines += _table("sizes", dict(spec.sizes))
    launch = spec.launch
    cluster = list(launch.cluster) if launch.cluster is not None else None
    lines += _table("launch", {"grid": list(launch.grid), "block": list(launch.block),
                               "shared_bytes": launch.shared_bytes, "cluster": cluster})  # fmt: skip
    for arg in spec.args:
        lines += _table("args", _arg(arg), array=True)
    lines += _table("reference", {"torch": spec.reference.torch, "python": spec.reference.python})
    lines += _table("check", {"atol": spec.atol, "rtol": spec.rtol,
                              "sizes": [dict(s) for s in spec.check_sizes] or None,
                              **_launch_ranges(spec.check_launch)})  # fmt: skip
    lines += _table("cost", {"bytes": spec.cost_bytes, "flops": spec.cost_flops})
    return "\n".join(lines).lstrip("\n")


def write_spec(spec: KernelSpec, path: Path, header: str = "") -> tuple[Path, Path]:
    """Write ``spec`` as ``path`` (TOML) and its PTX beside it (same stem, ``.ptx``); return both.

    A spec of CUDA source not yet lowered gets its source beside it instead (``.cu``).
    ``karyamorph run PATH`` then runs exactly this kernel.
    """
    cuda = spec.cuda if spec.cuda is not None and not spec.ptx else None
    source_path = path.with_suffix(".ptx" if cuda is None else ".cu")
    path.parent.mkdir(parents=True, exist_ok=True)
    # newline="": the text byte for byte, so line numbers in messages stay the source's.
    source_path.write_text(spec.ptx if cuda is None else cuda.text, newline="")
    path.write_text(spec_toml(spec, source_path.name, header))
    return path, source_path
