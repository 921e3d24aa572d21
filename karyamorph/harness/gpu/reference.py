"""The expected outputs of a KernelSpec: its [reference] torch expression or Python function."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.spec import ArgSpec, SpecError, flat_args

if TYPE_CHECKING:
    import torch


def output_args(kernel: BoundKernel) -> tuple[ArgSpec, ...]:
    """The arguments a reference must produce, in order: every ``out`` and ``inout`` buffer."""
    return tuple(a for a in flat_args(kernel.args) if a.role in ("out", "inout"))


def reference_names(kernel: BoundKernel, tensors: Mapping[str, Any]) -> dict[str, Any]:
    """What a reference sees: sizes and scalar arguments as Python numbers, buffers as tensors.

    Later entries win on a name clash (sizes, then scalars, then buffers), so a scalar ``n``
    whose value is the size ``n`` is the same number either way.
    """
    names: dict[str, Any] = dict(kernel.sizes)
    args = flat_args(kernel.args)  # a struct's fields by their own names
    for arg in args:
        if not arg.is_pointer:
            names[arg.name] = kernel.scalars[arg.name]
    for arg in args:
        if arg.is_pointer and arg.name in tensors:
            names[arg.name] = tensors[arg.name]
    return names


def _described(names: Mapping[str, Any]) -> str:
    return ", ".join(sorted(names)) or "none"


def _load_function(kernel: BoundKernel, target: str, key: str) -> Callable[..., Any]:
    module_name, _, func_name = target.partition(":")
    folder = str(kernel.spec.source_path.parent) if kernel.spec.source_path else None
    added = folder is not None and folder not in sys.path
    if added:
        # A reference module may sit next to its spec file.
        sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(key, f"cannot import module {module_name!r} of {target!r}: {exc}") from None
    finally:
        if added:
            sys.path.remove(str(folder))
    fn = getattr(module, func_name, None)
    if not callable(fn):
        raise SpecError(key, f"module {module_name!r} has no function {func_name!r}")
    return fn


def _call(fn: Callable[..., Any], names: Mapping[str, Any], key: str) -> Any:
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        kwargs = dict(names)
    else:
        wanted = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        missing = [
            p.name for p in params
            if p.name in wanted and p.name not in names and p.default is inspect.Parameter.empty
        ]  # fmt: skip
        if missing:
            raise SpecError(
                key,
                f"the function needs {', '.join(missing)}, which are not spec names ({_described(names)})",
            )
        kwargs = {k: v for k, v in names.items() if k in wanted}
    return fn(**kwargs)


def evaluate_reference(kernel: BoundKernel, tensors: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The expected value of every ``out``/``inout`` argument, in argument order.

    Parameters
    ----------
    kernel : BoundKernel
        Its ``reference.torch`` is evaluated with ``torch`` and every name of
        :func:`reference_names` in scope; its ``reference.python`` (``module:function``) is
        called with those names as keyword arguments (only the ones it declares, unless it takes
        ``**kwargs``).
    tensors : mapping
        The buffers by argument name, on the device where the reference should run. The
        reference may modify them: pass copies. A result on another device (or a numpy
        array) is moved to the buffer's device; a reference that goes through numpy takes
        ``tensor.cpu()`` itself.

    Returns
    -------
    tuple of Tensor
        One per output argument, shaped like it (a result with the same number of elements but
        another shape is reshaped).

    Raises
    ------
    SpecError
        No reference, a failing expression or function (with the exception and the names in
        scope), or a result whose count or size does not fit the outputs; the key names
        ``reference.torch`` or ``reference.python``.
    """
    import torch

    where = kernel.spec.where
    names = reference_names(kernel, tensors)
    ref = kernel.spec.reference
    if ref.torch is not None:
        key = f"{where}: reference.torch"
        try:
            code = compile(ref.torch, key, "eval")
        except SyntaxError as exc:
            raise SpecError(key, f"not a Python expression: {ref.torch!r} ({exc.msg})") from None
        try:
            result = eval(code, {"torch": torch, "__builtins__": __builtins__}, dict(names))
        except (NameError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as exc:
            raise SpecError(
                key,
                f"evaluating {ref.torch!r} failed: {type(exc).__name__}: {exc} "
                f"(names in scope: torch, {_described(names)})",
            ) from None
    elif ref.python is not None:
        key = f"{where}: reference.python"
        fn = _load_function(kernel, ref.python, key)
        try:
            result = _call(fn, names, key)
        except SpecError:
            raise
        except (NameError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as exc:
            raise SpecError(key, f"calling {ref.python!r} failed: {type(exc).__name__}: {exc}") from None
    else:
        raise SpecError(f"{where}: reference", "the spec has no [reference] (torch = ... or python = ...)")
    return _as_outputs(kernel, result, key, tensors)


def _as_outputs(
    kernel: BoundKernel, result: Any, key: str, tensors: Mapping[str, torch.Tensor]
) -> tuple[torch.Tensor, ...]:
    import torch

    outputs = output_args(kernel)
    values = tuple(result) if isinstance(result, tuple | list) else (result,)
    if len(values) != len(outputs):
        have = ", ".join(a.name for a in outputs) or "none"
        raise SpecError(
            key, f"gives {len(values)} result(s) but the spec has {len(outputs)} output(s): {have}"
        )
    shaped = []
    for arg, value in zip(outputs, values, strict=True):
        like = tensors.get(arg.name)
        device = like.device if like is not None else None
        tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(value, device=device)
        if device is not None and tensor.device != device:
            tensor = tensor.to(device)  # a reference computed on the CPU (numpy, say) is fine
        shape = kernel.shapes[arg.name]
        numel = 1
        for d in shape:
            numel *= d
        if tensor.numel() != numel:
            raise SpecError(
                key,
                f"result for {arg.name!r} has shape {tuple(tensor.shape)} ({tensor.numel()} elements) "
                f"but the argument has shape {shape} ({numel} elements)",
            )
        shaped.append(tensor.reshape(shape))
    return tuple(shaped)
