"""How a spec gives its kernel: PTX (a file or inline) or CUDA C++ (a file or inline) with nvcc's
options, read from ``[kernel]`` and checked."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from karyamorph.isa.parser import decode
from karyamorph.kernel.spec import INLINE_CUDA, CudaSource, SpecError

# Each way of giving the kernel, as the "give either ... or ..., not both" message names it.
SOURCES = {"ptx": "ptx (a file)", "source": "source (inline PTX)", "cu": "cu (a CUDA file)",
            "cuda": "cuda (inline CUDA)"}  # fmt: skip

# nvcc options that would undo what the harness asks of nvcc: PTX, for the run's target, into
# the file it reads back. Each also matches as ``OPTION=VALUE``.
RESERVED_OPTIONS = {
    "the target is the run's (--arch)": (
        "-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code",
    ),
    "the harness names the output": ("-o", "--output-file", "-odir", "--output-directory"),
    "the harness asks for PTX (-ptx)": (
        "-c", "--compile", "-cubin", "--cubin", "-fatbin", "--fatbin", "-E", "--preprocess", "-M",
        "--generate-dependencies", "-dc", "--device-c", "-dw", "--device-w", "-link", "--link", "-lib",
        "--lib", "-run", "--run", "-optix-ir", "--optix-ir", "-ltoir", "--ltoir",
    ),
}  # fmt: skip


def string_field(table: dict[str, Any], key: str, where: str) -> str | None:
    """``table[key]`` as a non-empty string, or None when absent."""
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SpecError(where, f"expected a string, got {value!r}")
    if not value.strip():
        raise SpecError(where, "expected a non-empty string")
    return value


def kernel_source(
    kernel: dict[str, Any], given: dict[str, str | None], base: Path | None, name: str
) -> tuple[str, Path | None, CudaSource | None]:
    """``[kernel]``'s one way of giving the kernel (``given``: each way's string, or None):
    ``(ptx, ptx_path, None)`` for PTX, ``("", None, source)`` for CUDA C++, which the harness
    compiles once it knows the target."""
    chosen = [key for key, value in given.items() if value is not None]
    if len(chosen) > 1:
        first, second = (SOURCES[key] for key in chosen[:2])
        raise SpecError(f"{name}: [kernel]", f"give either {first} or {second}, not both")
    if not chosen:
        raise SpecError(
            f"{name}: [kernel]",
            'missing ptx = "file.ptx" or source = """...""" (PTX), or cu = "file.cu" or '
            'cuda = """...""" (CUDA C++)',
        )
    key = chosen[0]
    value = given[key]
    assert value is not None  # chosen holds the keys whose value is given
    options = nvcc_options(kernel.get("options"), f"{name}: kernel.options")
    if options is not None and key in ("ptx", "source"):
        raise SpecError(f"{name}: kernel.options", "options are nvcc's: they go with cu or cuda, not PTX")
    if key == "source":
        return value, None, None
    if key == "cuda":
        return "", None, CudaSource(value, INLINE_CUDA, options or (), None, base)
    path = Path(value)
    if base is not None and not path.is_absolute():
        path = base / path
    what = "PTX" if key == "ptx" else "CUDA"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SpecError(f"{name}: kernel.{key}", f"{what} file not found: {path}") from None
    except OSError as exc:
        raise SpecError(f"{name}: kernel.{key}", f"cannot read {path}: {exc.strerror}") from None
    if key == "ptx":
        return decode(data, str(path)), path, None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{name}: kernel.cu", f"{path} is not UTF-8 text (byte {exc.start})") from None
    return "", None, CudaSource(text, value, options or (), path, path.parent)


def nvcc_options(raw: Any, where: str) -> tuple[str, ...] | None:
    """``[kernel] options``: nvcc options, each a non-empty string; None when absent."""
    if raw is None:
        return None
    example = '["-DBLOCK=256", "--use_fast_math"]'
    if not isinstance(raw, list):
        raise SpecError(where, f"expected a list of strings such as {example}, got {raw!r}")
    for i, option in enumerate(raw):
        if not isinstance(option, str) or not option.strip():
            raise SpecError(f"{where}[{i}]", f"expected a non-empty string (an nvcc option), got {option!r}")
        flag = option.split("=", 1)[0]
        for why, flags in RESERVED_OPTIONS.items():
            if flag in flags:
                raise SpecError(f"{where}[{i}]", f"{option!r} is not an option a spec may set: {why}")
    return tuple(raw)


def cuda_source(text: str, base: Path | None) -> CudaSource | None:
    """The CUDA source the spec ``text`` gives (its ``.cu`` file read from beside ``base``), or
    None for a spec of PTX. Only ``[kernel]`` is read: what shows a stored run's source lines
    needs the source, not a spec that binds.

    Raises
    ------
    SpecError
        The text is not TOML, or its ``[kernel]`` gives no usable source.
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError("<spec>", f"not valid TOML: {exc}") from None
    kernel = doc.get("kernel")
    if not isinstance(kernel, dict):
        raise SpecError("<spec>", "missing [kernel] table")
    given = {key: string_field(kernel, key, f"<spec>: kernel.{key}") for key in SOURCES}
    return kernel_source(kernel, given, base, "<spec>")[2]
