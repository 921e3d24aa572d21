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

from karyamorph.kernel.spec import ArgSpec, Init, KernelSpec

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


def _arg(arg: ArgSpec) -> dict[str, Scalar | Sequence[Scalar] | None]:
    if not arg.is_pointer:
        return {"name": arg.name, "role": arg.role, "dtype": arg.dtype.name, "value": arg.value}
    return {"name": arg.name, "role": arg.role, "dtype": arg.dtype.name, "shape": list(arg.shape),
            "init": _init(arg.init)}  # fmt: skip


def spec_toml(spec: KernelSpec, ptx_file: str, header: str = "") -> str:
    """The TOML of ``spec`` with its PTX in ``ptx_file`` (a path relative to the TOML file).

    Parameters
    ----------
    spec : KernelSpec
    ptx_file : str
        Where the PTX text is written beside the spec (see :func:`write_spec`).
    header : str
        Comment lines put first (each line gets ``# ``).
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines += ["", *_table("kernel", {"ptx": ptx_file, "entry": spec.entry})]
    lines += _table("sizes", dict(spec.sizes))
    launch = spec.launch
    lines += _table("launch", {"grid": list(launch.grid), "block": list(launch.block),
                               "shared_bytes": launch.shared_bytes})  # fmt: skip
    for arg in spec.args:
        lines += _table("args", _arg(arg), array=True)
    lines += _table("reference", {"torch": spec.reference.torch, "python": spec.reference.python})
    lines += _table("check", {"atol": spec.atol, "rtol": spec.rtol,
                              "sizes": [dict(s) for s in spec.check_sizes] or None})  # fmt: skip
    lines += _table("cost", {"bytes": spec.cost_bytes, "flops": spec.cost_flops})
    return "\n".join(lines).lstrip("\n")


def write_spec(spec: KernelSpec, path: Path, header: str = "") -> tuple[Path, Path]:
    """Write ``spec`` as ``path`` (TOML) and its PTX beside it (same stem, ``.ptx``); return both.

    ``karyamorph run PATH`` then runs exactly this kernel.
    """
    ptx_path = path.with_suffix(".ptx")
    path.parent.mkdir(parents=True, exist_ok=True)
    ptx_path.write_text(spec.ptx)
    path.write_text(spec_toml(spec, ptx_path.name, header))
    return path, ptx_path
