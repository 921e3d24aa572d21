"""Refuted verdicts are sound and readable: every witness replays, a witness the interpreter
contradicts is never reported as refuted (and no known kernel produces one), witnesses speak the
spec's argument names and the source lines of ``.loc``, and ``check`` takes a budget."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.session import load_bound
from karyamorph.harness.stages.model import check_inputs, check_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.check import checker
from karyamorph.model.check.checker import check
from karyamorph.model.check.properties import CONTRADICTED
from karyamorph.model.check.verdict import Replay
from karyamorph.model.check.witnesses import source_lines
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.kernels.manifest import load_manifest

MANIFEST = load_manifest()
KERNELS = Path(__file__).resolve().parents[1] / "kernels"
CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SPECS = [c.spec_path for c in MANIFEST.kernels] + sorted(CORPUS.glob("*.toml"))


def test_no_known_kernel_gives_a_contradicted_witness() -> None:
    """The count of counterexamples the interpreter contradicted, over the known-verdict
    kernels and the corpus: a checker defect each, so the count must be 0."""
    contradicted = []
    for path in SPECS:
        kernel, module = load_bound(path)
        spec = kernel.spec
        for v in check_spec(kernel, module):
            if CONTRADICTED in v.reason:
                contradicted.append(f"{spec.name} {v.property}: {v.reason}")
            if v.verdict == "refuted":
                assert v.replay is not None and v.replay.status != "not confirmed", (spec.name, v)
    assert contradicted == []


def test_a_contradicted_witness_is_unknown_never_refuted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the interpreter to contradict every counterexample, the verdict is unknown with the
    reason, and the search for another counterexample went on (up to three)."""
    seen: list[str] = []

    def contradict(*args: object, **kw: object) -> Replay:
        seen.append(str(args[6]))
        return Replay("not confirmed", "the launch ran to completion without a race")

    monkeypatch.setattr(checker, "replay_witness", contradict)
    v = check_spec(*load_bound(MANIFEST.kernel("reduce_racy").spec_path), properties=("race",))[0]
    assert v.verdict == "unknown" and v.witness is None and not v.passed, v
    assert v.reason.startswith(CONTRADICTED) and "did not replay" in v.reason
    assert 1 <= len(seen) <= 3


def test_input_dependent_race_names_equal_inputs_that_replay() -> None:
    """h[in[i]] += 1: the witness gives two threads of a block and their input bytes, equal,
    under the spec's name for the input buffer; the interpreter confirms it with those inputs."""
    v = check_spec(*load_bound(MANIFEST.kernel("hist_bytes").spec_path), properties=("race",))[0]
    assert v.verdict == "refuted" and v.witness is not None
    w = v.witness
    inputs = dict(w.inputs)
    assert len(inputs) == 2 and all(k.startswith("data[") for k in inputs), inputs
    assert len(set(inputs.values())) == 1  # equal bytes: one bin
    a, b = (int(k[5:-1]) for k in inputs)
    threads = {t.block[0] * 128 + t.thread[0] for t in w.threads}
    assert {a % 512, b % 512} == threads  # each thread's own element (grid-stride: 512 apart)
    assert v.replay is not None and v.replay.status == "confirmed"


def test_inputs_read_narrower_than_the_argument_are_byte_ranges() -> None:
    """hist_global reads only the low byte of each int key (ld.global.u8): the witness gives the
    two key bytes, equal, as byte ranges of the int array, and they replay."""
    v = check_spec(*load_bound(MANIFEST.kernel("hist_global").spec_path), properties=("race",))[0]
    assert v.verdict == "refuted" and v.witness is not None
    inputs = dict(v.witness.inputs)
    assert len(inputs) == 2 and len(set(inputs.values())) == 1, inputs
    starts = sorted(int(k.split("[")[1].split(":")[0]) for k in inputs)
    assert all(k.startswith("keys.bytes[") for k in inputs) and all(s % 4 == 0 for s in starts)
    threads = sorted(t.block[0] * 128 + t.thread[0] for t in v.witness.threads)
    assert [s // 4 for s in starts] == threads
    assert v.replay is not None and v.replay.status == "confirmed"


def test_witness_names_the_spec_arguments_not_entry_params() -> None:
    kernel, module = load_bound(MANIFEST.kernel("vadd_noguard").spec_path)
    v = check_spec(kernel, module, properties=("bounds",))[0]
    assert v.witness is not None and v.witness.buffer in ("a", "b", "c"), v.witness
    assert "_param_" not in str(v.witness)
    raw = check(module, kernel.entry, ptx_machine(), kernel.launch,
                *check_inputs(kernel, module.entry(kernel.entry)), properties=("bounds",))[0]  # fmt: skip
    assert raw.witness is not None and "_param_" in (raw.witness.buffer or "")


def test_witness_gives_the_source_line_beside_the_ptx_line() -> None:
    """nvcc -lineinfo PTX carries .loc: a race made by removing the first barrier of the shared
    tree (reduce_shared.cu line 20) is reported at reduce_shared.cu:21 (the tree's update)."""
    spec = load_spec(CORPUS / "reduce_shared_256.sm_90.toml")
    lines = spec.ptx.split("\n")
    assert lines[81].strip() == "bar.sync \t0;"
    lines[81] = "\t// barrier removed"
    broken = dataclasses.replace(spec, ptx="\n".join(lines))
    v = check_spec(bind(broken), prepare(broken), properties=("race",))[0]
    assert v.verdict == "refuted" and v.witness is not None, v
    assert all(s.startswith("src/reduce_shared.cu:") for s in v.witness.sources), v.witness.sources
    assert "src/reduce_shared.cu:" in str(v.witness)
    table = source_lines(prepare(spec), spec.entry)
    assert table[70] == "src/reduce_shared.cu:17"  # the __syncthreads() after buf[tid] = v


def test_triton_loc_gives_the_inlined_site() -> None:
    spec = load_spec(CORPUS / "softmax_rows.sm_90a.toml")
    table = source_lines(prepare(spec), spec.entry)
    store = next(n for n, text in enumerate(spec.ptx.split("\n"), 1) if "st.shared.b32" in text)
    assert table[store] == "standard.py:216 (inlined at triton_kernels.py:27)"


def test_a_counter_start_the_witness_needs_is_one_of_its_inputs() -> None:
    """With count's start unknown (not the spec's zeros), a start past zero overruns y: the
    witness names it (``compact_param_2[0]``: count, by its PTX name here) and the replay,
    which writes it, confirms the overrun. Counted from zero the slots fit."""
    kernel, module = load_bound(MANIFEST.kernel("compact").spec_path)
    buffers, scalars = check_inputs(kernel, module.entry(kernel.entry))
    v = check(module, kernel.entry, ptx_machine(), kernel.launch, buffers, scalars, properties=("bounds",))[0]
    assert v.verdict == "refuted" and v.witness is not None and v.witness.lines == (51,), v
    assert dict(v.witness.inputs).get("compact_param_2[0]", 0) != 0, v.witness
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_cli_budget_and_strict() -> None:
    spec = str(KERNELS / "warp_store_same.toml")
    plain = CliRunner().invoke(main, ["check", spec, "--format", "json"])
    assert plain.exit_code == 0, plain.output
    race = json.loads(plain.output)["properties"][1]
    assert race["verdict"] == "proved" and "benign" in race["reason"]
    strict = CliRunner().invoke(main, ["check", spec, "--strict", "--format", "json"])
    assert strict.exit_code == 1
    assert json.loads(strict.output)["properties"][1]["verdict"] == "refuted"
    broke = CliRunner().invoke(main, ["check", spec, "--budget", "0", "--format", "json"])
    assert broke.exit_code == 1
    verdicts = json.loads(broke.output)["properties"]
    # What needs no solver call (a barrier every thread reaches) may still be proved; the rest
    # is unknown with the budget named, never refuted and never passed for want of time.
    assert all(v["verdict"] in ("unknown", "proved") for v in verdicts)
    assert verdicts[1]["verdict"] == "unknown" and "time budget of 0 s" in verdicts[1]["reason"]
