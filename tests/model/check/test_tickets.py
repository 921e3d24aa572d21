"""Atomic counters as tickets: ``slot = atomicAdd(count, 1); out[slot] = v`` is in bounds (the
counter starting at zero, ``out`` holding one element per thread) and race free; one element
short is out of bounds, a shared slot is a race, and a counter other accesses touch keeps the
atomic's result free (unknown, with why)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from karyamorph.harness.session import load_bound
from karyamorph.harness.stages.model import check_spec
from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.kernels.manifest import load_manifest

MANIFEST = load_manifest()

# Every thread takes a ticket from count[0] (ATOM) and stores its id at out[slot] (SLOT may
# change the slot first; EXTRA may touch the counter otherwise).
TICKETS = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry tickets(.param .u64 out, .param .u64 count)
{
    .reg .b32 %t, %s, %e;
    .reg .b64 %a, %c, %o;
    ld.param.u64 %a, [out];
    ld.param.u64 %c, [count];
    cvta.to.global.u64 %a, %a;
    cvta.to.global.u64 %c, %c;
    mov.u32 %t, %tid.x;
    ATOM
    SLOT
    mul.wide.u32 %o, %s, 4;
    add.s64 %o, %a, %o;
    st.global.u32 [%o], %t;
    EXTRA
    ret;
}
"""
ADD = "atom.global.add.u32 %s, [%c], 1;"
LAUNCH = (2, 128, 0)  # 256 threads take a ticket each


def _check(
    atom: str = ADD,
    slot: str = "",
    extra: str = "",
    out: int = 256,
    zeroed: bool = True,
    counters: int = 1,
    start: int | None = None,
) -> list[Verdict]:
    """The bounds and race verdicts; the counters hold zeros at launch (``zeroed``), or ``start``
    each, or what a witness chooses (neither)."""
    ptx = TICKETS.replace("ATOM", atom).replace("SLOT", slot).replace("EXTRA", extra)
    contents = {}
    if zeroed or start is not None:
        contents["count"] = np.full(counters, start or 0, np.uint32)
    return check(
        parse(ptx), "tickets", ptx_machine(), LAUNCH, {"out": 4 * out, "count": 4 * counters}, {},
        properties=("bounds", "race"), contents=contents,
    )  # fmt: skip


def test_tickets_of_a_zeroed_counter_index_in_bounds_and_race_free() -> None:
    bounds, race = _check()
    assert bounds.verdict == "proved" and race.verdict == "proved", (bounds, race)


def test_one_element_short_is_out_of_bounds() -> None:
    bounds, race = _check(out=255)
    assert bounds.verdict == "refuted" and bounds.witness is not None, bounds
    assert bounds.witness.lines == (18,) and bounds.witness.address == 255 * 4
    assert race.verdict == "proved", race


def test_a_counter_of_unknown_start_still_gives_distinct_slots() -> None:
    """Without zeros at launch the slots may start anywhere: a start the witness names
    (``count[0]``, which the replay writes) overruns ``out``. Two threads' slots still differ."""
    bounds, race = _check(zeroed=False)
    assert bounds.verdict == "refuted" and bounds.witness is not None, bounds
    start = dict(bounds.witness.inputs)["count[0]"]
    assert start != 0, start  # counted from zero, the 256 slots fit
    assert bounds.replay is not None and bounds.replay.status == "confirmed", bounds.replay
    assert race.verdict == "proved", race


def test_a_race_on_tickets_names_the_start_and_replays_whichever_thread_draws_them() -> None:
    """Tickets 2j and 2j + 1 share a slot. The witness counts from zero (``count[0] = 0``, as a
    zeroed counter would), marks both threads as served by the atomic, and the replay finds the
    two threads that drew those tickets in its own order."""
    race = _check(slot="shr.u32 %s, %s, 1;", zeroed=False)[1]
    assert race.verdict == "refuted" and race.witness is not None, race
    w = race.witness
    assert dict(w.inputs) == {"count[0]": 0} and w.served == (True, True), w
    assert "whichever thread draws its ticket" in str(w)
    assert race.replay is not None and race.replay.status == "confirmed", race.replay


def test_a_start_the_spec_fixes_is_the_counters_start() -> None:
    """``slot = atomicAdd(count, 1) - 1`` with ``count`` at ones (as the spec's ``init = "ones"``
    gives it): the slots are 0-255, in bounds. From zero the first slot is -1, and a witness may
    not count from zero where the spec says one: a buffer one short is refuted with the spec's
    ``count[0] = 1``, which the replay writes and confirms."""
    minus_one = "sub.u32 %s, %s, 1;"
    bounds, race = _check(slot=minus_one, zeroed=False, start=1)
    assert bounds.verdict == "proved" and race.verdict == "proved", (bounds, race)
    assert _check(slot=minus_one)[0].verdict == "refuted"  # zeros: slot -1
    short = _check(slot=minus_one, zeroed=False, start=1, out=255)[0]
    assert short.verdict == "refuted" and short.witness is not None, short
    assert dict(short.witness.inputs) == {"count[0]": 1}, short.witness
    assert short.replay is not None and short.replay.status == "confirmed", short.replay


def test_halved_tickets_share_slots_and_race() -> None:
    """Tickets 2j and 2j + 1 land on one slot: refuted, and the replay confirms it with
    whichever two threads draw such tickets in its order."""
    bounds, race = _check(slot="shr.u32 %s, %s, 1;")
    assert bounds.verdict == "proved", bounds
    assert race.verdict == "refuted" and race.witness is not None and race.witness.lines == (18, 18), race
    assert race.replay is not None and race.replay.status == "confirmed", race.replay


def test_a_stride_of_two_needs_twice_the_buffer() -> None:
    assert _check(atom="atom.global.add.u32 %s, [%c], 2;", out=511)[0].verdict == "proved"
    assert _check(atom="atom.global.add.u32 %s, [%c], 2;", out=510)[0].verdict == "refuted"


def test_atom_inc_tickets_stay_below_their_bound() -> None:
    """atomicInc(count, b) counts 0, 1, ... while below b: with b = 255 and 256 threads every
    slot is distinct and below 256; with b = 100 the counter wraps and slots repeat."""
    bounds, race = _check(atom="atom.global.inc.u32 %s, [%c], 255;")
    assert bounds.verdict == "proved" and race.verdict == "proved", (bounds, race)
    assert _check(atom="atom.global.inc.u32 %s, [%c], 100;")[1].verdict != "proved"


def test_a_counter_other_accesses_touch_is_not_a_ticket_dispenser() -> None:
    """A thread that also reads the counter may see any count: the atomic's result stays free,
    and the verdict says why."""
    bounds, race = _check(extra="ld.global.u32 %e, [%c];")
    assert race.verdict != "proved", race
    assert bounds.verdict == "unknown", bounds
    assert "not a ticket" in bounds.reason and "touched by other accesses" in bounds.reason, bounds.reason


def test_compact_from_nvcc_is_proved() -> None:
    """``compact`` (nvcc output, y[atomicAdd(count, 1)] = x[i] for x[i] > 0, count zeroed by its
    spec): at most n = 1000 threads pass the guard, so the slots fit y's 1000 elements."""
    spec = MANIFEST.kernel("compact").spec_path
    verdicts = check_spec(*load_bound(spec))
    assert [v.verdict for v in verdicts] == ["proved"] * 3, verdicts


def test_compact_with_y_one_short_is_out_of_bounds(tmp_path: Path) -> None:
    spec = MANIFEST.kernel("compact").spec_path
    text = spec.read_text().replace('shape = ["n"]\ninit = "zeros"', 'shape = ["n - 1"]\ninit = "zeros"')
    assert 'shape = ["n - 1"]' in text
    short = tmp_path / "compact.toml"
    short.write_text(text.replace('ptx = "compact.ptx"', f'ptx = "{spec.parent / "compact.ptx"}"'))
    bounds = check_spec(*load_bound(short), properties=("bounds",))[0]
    assert bounds.verdict == "refuted" and bounds.witness is not None and bounds.witness.lines == (51,), (
        bounds
    )


def test_a_block_scoped_atomic_on_global_memory_hands_out_no_tickets() -> None:
    """atom.cta is atomic only among one block's threads: two blocks may draw one slot."""
    bounds, race = _check(atom="atom.cta.global.add.u32 %s, [%c], 1;")
    assert race.verdict != "proved", race
    assert "atomic only within its block" in bounds.reason, bounds


def test_one_counter_per_block_gives_slots_distinct_within_the_block() -> None:
    """count[ctaid] (zeros): the slots of one block are distinct, those of two blocks overlap
    unless spread apart (by 256, the threads that may take a ticket of one counter)."""
    per_block = "mov.u32 %e, %ctaid.x; mul.wide.u32 %o, %e, 4; add.s64 %c, %c, %o; " + ADD
    spread = "mov.u32 %e, %ctaid.x; shl.b32 %e, %e, 8; add.u32 %s, %s, %e;"  # + 256 * ctaid
    bounds, race = _check(atom=per_block, slot=spread, out=512, counters=2)
    assert bounds.verdict == "proved" and race.verdict == "proved", (bounds, race)
    bounds, race = _check(atom=per_block, counters=2)
    assert race.verdict in ("refuted", "unknown"), race


SHARED = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry shared_tickets(.param .u64 out)
{
    .reg .b32 %t, %s, %n, %b;
    .reg .b64 %a, %o;
    .shared .align 4 .u32 cnt;
    ld.param.u64 %a, [out];
    cvta.to.global.u64 %a, %a;
    mov.u32 %t, %tid.x;
    mov.u32 %n, cnt;
    atom.shared.add.u32 %s, [%n], 1;
    mov.u32 %b, %ctaid.x;
    SLOT
    mul.wide.u32 %o, %s, 4;
    add.s64 %o, %a, %o;
    st.global.u32 [%o], %t;
    ret;
}
"""


def test_a_shared_counter_serves_each_block_on_its_own() -> None:
    """Each block's own (unset) shared counter: within a block the slots differ; spread by block
    ((ctaid * 128 + slot) & 255 with 128 threads a block) they cannot be shown apart, since two
    blocks' counters may start anywhere."""

    def race(slot: str) -> Verdict:
        module = parse(SHARED.replace("SLOT", slot))
        v = check(module, "shared_tickets", ptx_machine(), LAUNCH, {"out": 1024}, {}, properties=("race",))
        return v[0]  # type: ignore[no-any-return]

    one_block = check(
        parse(SHARED.replace("SLOT", "and.b32 %s, %s, 127;")), "shared_tickets", ptx_machine(),
        (1, 128, 0), {"out": 512}, {}, properties=("race",),
    )[0]  # fmt: skip
    assert one_block.verdict == "proved", one_block
    assert race("shl.b32 %b, %b, 7; add.u32 %s, %s, %b; and.b32 %s, %s, 255;").verdict != "proved"


def test_unset_shared_counters_of_two_blocks_race_from_zero() -> None:
    """Each block's shared counter is never set (GPUVerify's bad_local_counters): two blocks
    whose counters hold one value at launch draw one slot. The witness counts from zero, what
    the replay's shared memory holds, and the replay confirms it. Whether a slot overruns
    hinges on a start the replay cannot set: unknown, with why."""
    module = parse(SHARED.replace("SLOT", ""))
    bounds, race = check(
        module, "shared_tickets", ptx_machine(), LAUNCH, {"out": 512}, {}, properties=("bounds", "race")
    )
    assert race.verdict == "refuted" and race.witness is not None, race
    assert dict(race.witness.inputs) == {"cnt[0]": 0}, race.witness
    assert race.witness.threads[0].block != race.witness.threads[1].block, race.witness
    assert race.replay is not None and race.replay.status == "confirmed", race.replay
    assert bounds.verdict == "unknown" and "shared counter held at launch" in bounds.reason, bounds
