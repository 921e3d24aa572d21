"""Rewrite proofs kept by content (karyamorph.search.kept_proofs): a proved rewrite read back
from the tool cache for the same kernel, rewrite and model, never for another; a rejection
proved again with its witness; nothing kept with caching off."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from karyamorph.kernel.loader import load_spec
from karyamorph.model.rewrite import rewrite_named
from karyamorph.search.kept_proofs import KEPT, KIND, prove_kept

IN_PLACE = Path(__file__).resolve().parents[1] / "model/rewrite/data/double_inplace.toml"
SIZES = {"n": 40}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KARYAMORPH_CACHE", str(tmp_path))
    return tmp_path


def test_a_proof_is_kept_and_read_back_for_the_same_kernel(cache: Path) -> None:
    spec = load_spec(IN_PLACE)
    first = prove_kept(spec, rewrite_named("st.cs"), SIZES, arch="sm_90")
    assert first.proved and KEPT not in first.reason and first.seconds > 0
    assert len(list((cache / KIND).iterdir())) == 1
    again = prove_kept(spec, rewrite_named("st.cs"), SIZES, arch="sm_90")
    assert again.proved and again.reason == f"{first.reason}; {KEPT}"
    assert again.sizes == first.sizes == (("n", 40),)


def test_another_kernel_size_arch_or_rewrite_is_proved_anew(cache: Path) -> None:
    spec = load_spec(IN_PLACE)
    prove_kept(spec, rewrite_named("st.cs"), SIZES, arch="sm_90")
    edited = dataclasses.replace(spec, ptx=spec.ptx.replace("shl.b32", "add.u32", 1))
    assert edited.ptx != spec.ptx
    others = [
        prove_kept(edited, rewrite_named("st.cs"), SIZES, arch="sm_90"),
        prove_kept(spec, rewrite_named("st.wt"), SIZES, arch="sm_90"),
        prove_kept(spec, rewrite_named("st.cs"), {"n": 41}, arch="sm_90"),
        prove_kept(spec, rewrite_named("st.cs"), SIZES, arch="sm_120"),
    ]
    for verdict in others:
        assert verdict.proved and KEPT not in verdict.reason
    assert len(list((cache / KIND).iterdir())) == 5


def test_a_rejection_is_never_kept(cache: Path) -> None:
    spec = load_spec(IN_PLACE)
    for _ in range(2):  # x is read and written: .nc is refused with the write that breaks it
        verdict = prove_kept(spec, rewrite_named("ld.nc"), SIZES, arch="sm_90")
        assert not verdict.proved and verdict.witness is not None and KEPT not in verdict.reason
    assert not (cache / KIND).exists()


def test_nothing_is_kept_with_caching_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KARYAMORPH_CACHE", "off")
    spec = load_spec(IN_PLACE)
    for _ in range(2):
        verdict = prove_kept(spec, rewrite_named("st.cs"), SIZES, arch="sm_90")
        assert verdict.proved and KEPT not in verdict.reason
