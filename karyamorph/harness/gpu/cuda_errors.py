"""Driver errors: a failing ``cuda.bindings.driver`` call or cuda.core call as one exception type
that keeps the driver's error name."""

from __future__ import annotations

from typing import Any

from karyamorph.errors import KaryaMorphError


class CudaError(KaryaMorphError, RuntimeError):
    """A failing CUDA call; the message starts with the driver's error name (``CUDA_ERROR_...``)."""

    def __init__(self, name: str, description: str, where: str) -> None:
        self.name = name
        self.description = description
        self.where = where
        super().__init__(f"{name}: {description} (during {where})")


def check(result: tuple[Any, ...], where: str) -> Any:
    """Unpack a ``cuda.bindings.driver`` call's (error, value...) tuple or raise :class:`CudaError`."""
    from cuda.bindings import driver

    err, *rest = result
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        _, text = driver.cuGetErrorString(err)
        raise CudaError(
            name.decode() if isinstance(name, bytes) else str(err),
            text.decode() if isinstance(text, bytes) else "",
            where,
        )
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


def cuda_core_errors() -> tuple[type[BaseException], ...]:
    """The exception types cuda.core raises for driver errors (its CUDAError is not public)."""
    try:
        from cuda.core._utils.cuda_utils import CUDAError
    except ImportError:
        return (CudaError,)
    return (CudaError, CUDAError)


def as_cuda_error(exc: BaseException, where: str) -> CudaError:
    """A cuda.core driver error as :class:`CudaError`, its ``CUDA_ERROR_...`` name kept."""
    if isinstance(exc, CudaError):
        return exc
    text = str(exc)
    name, _, rest = text.partition(":")
    if not name.startswith("CUDA_ERROR"):
        return CudaError("CUDA_ERROR", text, where)
    return CudaError(name.strip(), rest.strip(), where)
