"""A spec's entry against the ``.entry`` names nvcc writes: the function inside a mangled name
(the symbols below are what nvcc 13.5 wrote for the kernels named beside them)."""

from __future__ import annotations

import pytest

from karyamorph.kernel.mangling import function_name, resolve_entry
from karyamorph.kernel.spec import SpecError


@pytest.mark.parametrize(
    ("symbol", "name"),
    [
        ("_Z7softmaxPKfPfi", "softmax"),  # softmax(const float*, float*, int)
        ("_Z4axpyfPKfPfj", "axpy"),  # axpy(float, const float*, float*, unsigned)
        ("_ZN2ns7softmaxEPKfPfi", "ns::softmax"),  # ns::softmax(...)
        ("_ZN2ns5inner1kEv", "ns::inner::k"),
        ("_Z4axpyILi1EEvfPKfPfj", "axpy"),  # template <int S> axpy<1>
        ("_Z1kIN2ns4EvilELi3EEvPf", "k"),  # k<ns::Evil, 3>: the letters of a name are no structure
        ("_ZL6staticv", "static"),  # a static (internal) function
        ("_ZNSt6vectorIiE4sizeEv", "std::vector::size"),
        ("softmax", None),  # extern "C": not mangled
        ("_Z", None),
        ("_Z99short", None),  # a length past the end
        ("_Z1kIiPf", None),  # template arguments that never close
    ],
)
def test_the_function_name_of_a_mangled_symbol(symbol: str, name: str | None) -> None:
    assert function_name(symbol) == name


def test_the_entry_itself_wins_then_the_one_kernel_of_that_name() -> None:
    names = ["softmax", "_Z7softmaxPKfPfi", "_Z4axpyfPKfPfj"]
    assert resolve_entry("softmax", names, "s.toml: kernel.entry", "s.cu") == "softmax"
    assert resolve_entry("axpy", names, "s.toml: kernel.entry", "s.cu") == "_Z4axpyfPKfPfj"
    # The _Z<len><name> prefix finds a kernel whose parameters this reader does not follow.
    assert resolve_entry("k", ["_Z1kDv4_f"], "s.toml: kernel.entry", "s.cu") == "_Z1kDv4_f"


def test_no_kernel_or_several_are_errors_that_list_them() -> None:
    names = ["_Z4axpyILi1EEvPf", "_Z4axpyILi2EEvPf", "other"]
    with pytest.raises(SpecError) as several:
        resolve_entry("axpy", names, "s.toml: kernel.entry", "s.cu")
    assert several.value.where == "s.toml: kernel.entry"
    assert "'axpy' names 2 kernels of s.cu (_Z4axpyILi1EEvPf, _Z4axpyILi2EEvPf)" in several.value.message
    with pytest.raises(SpecError) as none:
        resolve_entry("saxpy", names, "s.toml: kernel.entry", "s.cu")
    assert none.value.message == (
        "no .entry named 'saxpy' in the PTX of s.cu (entries: _Z4axpyILi1EEvPf, _Z4axpyILi2EEvPf, other)"
    )
