"""What the timed launches wrote, checked: a time counts only if the launches it measured computed.

A kernel can be right while a harness checks it and idle, stale or approximate while it is
timed. :class:`LaunchGuard` works around the timing loop of
:func:`karyamorph.harness.gpu.measurement.measure`, outside the timed window of every launch:

* before every launch (warm-up and timed) the ``out`` buffers are poisoned and the ``inout``
  ones restored, so that no answer is ever left lying in a buffer the kernel writes;
* before every timed launch a few randomly chosen elements of every random input are rotated
  among themselves, so that no two timed launches see the same inputs and a result cannot be
  cached (the positions are drawn for every timed launch when the guard opens, on the host, from
  a seed the kernel cannot see, and sent to the GPU once: a launch's exchange is two kernels);
* after every launch, the elements still holding the poison are counted on the GPU (a launch
  that skipped any work is seen, whichever launch it was);
* the first launch, the first and the last timed ones and one chosen at random in every
  doubling of the sample count are compared with the reference on the inputs they had;
* at the end the inputs of the first launch are put back and the kernel runs once more: its
  outputs must equal the first launch's, bit for bit unless the kernel is nondeterministic
  (float atomics, clock reads), so a kernel whose result depends on how often it ran fails.

Everything here runs in the GPU worker; the report (:class:`TimedCheck`) is plain data. The
guard also works on CPU tensors (no stream), where :func:`rehearse` drives it through the
launches of a measurement without the clock: how the checks are tested on the model
interpreter, with no GPU.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from karyamorph.harness.gpu.compare import Comparison, compare, tolerance_for
from karyamorph.harness.gpu.inputs import poison_, poison_mask
from karyamorph.harness.gpu.reference import evaluate_reference, output_args
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.spec import ArgSpec

if TYPE_CHECKING:
    import torch

# Inputs drawn at random can be permuted without leaving the values their spec describes.
RANDOM_INITS = ("randn", "rand", "randint")


@dataclass(frozen=True, slots=True)
class CheckedLaunch:
    """One launch's outputs against the reference on the inputs it had."""

    launch: int
    sample: int | None
    outputs: tuple[Comparison, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.outputs)

    def as_dict(self) -> dict[str, Any]:
        return {"launch": self.launch, "sample": self.sample, "passed": self.passed,
                "outputs": [c.as_dict() for c in self.outputs]}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Unwritten:
    """A launch that left ``elements`` of output ``name`` holding the poison."""

    launch: int
    sample: int | None
    name: str
    elements: int


@dataclass(frozen=True, slots=True)
class Repeat:
    """The first launch's inputs run again at launch ``launch``: do the outputs match?"""

    launch: int
    bitwise: bool
    outputs: tuple[Comparison, ...]
    nondeterministic_because: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.outputs)


@dataclass(frozen=True, slots=True)
class TimedCheck:
    """The verdict on what the launches of one measurement wrote.

    Attributes
    ----------
    launches : int
        Launches made (warm-up, timed and the repeat).
    checked : tuple of CheckedLaunch
        The launches compared with the reference.
    unwritten : tuple of Unwritten
        Every launch that left poisoned elements (empty for an honest kernel).
    repeat : Repeat or None
        The first launch's inputs again at the end.
    swapped_elements : int
        Elements exchanged in the inputs before every timed launch (0: no random input).
    """

    launches: int
    checked: tuple[CheckedLaunch, ...]
    unwritten: tuple[Unwritten, ...]
    repeat: Repeat | None
    swapped_elements: int

    @property
    def passed(self) -> bool:
        return (not self.unwritten and all(c.passed for c in self.checked)
                and (self.repeat is None or self.repeat.passed))  # fmt: skip

    def problems(self) -> list[str]:
        """One line per thing caught, naming the launch and the figures; empty when passed."""
        lines: list[str] = []
        if self.unwritten:
            first = self.unwritten[0]
            launches = sorted({u.launch for u in self.unwritten})
            lines.append(
                f"{len(launches)} of {self.launches} launches left outputs unwritten (first: launch "
                f"{first.launch}{_sample(first.sample)} left {first.elements} elements of {first.name} "
                "holding the poison): the kernel skipped work it had done before"
            )
        for c in self.checked:
            if not c.passed:
                wrong = "; ".join(o.message for o in c.outputs if not o.passed)
                lines.append(f"launch {c.launch}{_sample(c.sample)} differs from the reference: {wrong}")
        r = self.repeat
        if r is not None and not r.passed:
            how = "bit for bit" if r.bitwise else "within the tolerance"
            wrong = "; ".join(o.message for o in r.outputs if not o.passed)
            lines.append(f"launch 1 and launch {r.launch} had the same inputs but differ ({how}): {wrong}")
        return lines

    def summary(self) -> str:
        """One line for a passing check."""
        checked = ", ".join(str(c.launch) for c in self.checked)
        repeat = ""
        if self.repeat is not None:
            repeat = f"; launch {self.repeat.launch} repeated launch 1 " + (
                "bit for bit" if self.repeat.bitwise else "within the tolerance (nondeterministic kernel)"
            )
        return (f"every one of {self.launches} launches wrote all its outputs; launches {checked} "
                f"match the reference{repeat}; {self.swapped_elements} input elements exchanged "
                "before every timed launch")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        repeat = self.repeat
        return {
            "passed": self.passed,
            "launches": self.launches,
            "checked": [c.as_dict() for c in self.checked],
            "unwritten": [
                {"launch": u.launch, "sample": u.sample, "output": u.name, "elements": u.elements}
                for u in self.unwritten
            ],
            "repeat": None
            if repeat is None
            else {
                "launch": repeat.launch,
                "bitwise": repeat.bitwise,
                "passed": repeat.passed,
                "nondeterministic_because": list(repeat.nondeterministic_because),
                "outputs": [c.as_dict() for c in repeat.outputs],
            },
            "swapped_elements": self.swapped_elements,
            "problems": self.problems(),
        }


def _sample(sample: int | None) -> str:
    return " (warm-up)" if sample is None else f" (timed sample {sample + 1})"


def checked_samples(rng: random.Random, max_samples: int) -> frozenset[int]:
    """The timed samples compared with the reference: the first, and one at random in every
    doubling after it (1, 2-3, 4-7, ...), so a kernel cannot tell which launches are looked at."""
    chosen = {0}
    low = 1
    while low < max_samples:
        high = min(2 * low, max_samples)
        chosen.add(rng.randrange(low, high))
        low = high
    return frozenset(chosen)


@dataclass(slots=True)
class LaunchGuard:
    """The hooks around every launch of one measurement, on the GPU (torch, on the kernel's stream).

    Build it with :meth:`open` once the buffers hold the seed's inputs; pass :meth:`prepare` and
    :meth:`inspect` to :func:`~karyamorph.harness.gpu.measurement.measure`, then call :meth:`finish`
    with a function that launches the kernel once more.
    """

    kernel: BoundKernel
    tensors: dict[str, torch.Tensor]
    original: dict[str, torch.Tensor]
    torch_stream: Any
    rng: random.Random
    swaps: int
    checked: frozenset[int]
    nondeterministic: tuple[str, ...]
    launches: int = 0
    exchanges: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    first: dict[str, torch.Tensor] = field(default_factory=dict)
    pristine: dict[str, torch.Tensor] = field(default_factory=dict)
    poison_counts: list[tuple[int, int | None, str, Any]] = field(default_factory=list)
    results: list[CheckedLaunch] = field(default_factory=list)
    last_sample: int | None = None

    @staticmethod
    def open(kernel: BoundKernel, tensors: dict[str, torch.Tensor], stream_handle: int | None, *, seed: int,
             swaps: int, max_samples: int, nondeterministic: Sequence[str]) -> LaunchGuard:  # fmt: skip
        """Guard ``tensors`` (the kernel's buffers by name, holding the inputs of the first launch).

        ``stream_handle`` is the kernel's CUDA stream (None: CPU tensors); ``seed`` drives the
        choice of checked samples and exchanged elements (the kernel cannot see it);
        ``nondeterministic`` says why two runs of the kernel on the same inputs may differ in
        bits (empty: the repeat must be bit for bit).
        """
        import torch

        rng = random.Random(seed)
        inputs = {a.name for a in kernel.args if a.role in ("in", "inout")}
        guard = LaunchGuard(
            kernel, tensors, {n: t.clone() for n, t in tensors.items() if n in inputs},
            None if stream_handle is None else torch.cuda.ExternalStream(stream_handle), rng, swaps,
            checked_samples(rng, max_samples),
            tuple(nondeterministic),
        )  # fmt: skip
        guard.pristine = {a.name: guard.original[a.name].clone() for a in kernel.args if a.role == "inout"}
        guard.exchanges = {a.name: guard._positions(a, max_samples) for a in guard._swappable()}
        return guard

    def _positions(self, arg: ArgSpec, samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """For every timed sample, the positions of ``arg``'s elements to rotate and, in the same
        order, the positions their new values come from (the same ones rotated by one), as two
        (samples, count) index tensors on the buffer's device. Positions are drawn with
        replacement: one drawn twice in a sample (rare in a large input) leaves fewer elements
        moved; the reference is computed from the inputs as they are, so it stays right."""
        import numpy as np
        import torch

        flat = self.tensors[arg.name].view(-1)
        count = min(2 * self.swaps, flat.numel())
        rng = np.random.default_rng(self.rng.getrandbits(64))
        where = torch.from_numpy(rng.integers(0, flat.numel(), size=(max(samples, 1), count)))
        return where.to(flat.device), where.roll(1, dims=1).to(flat.device)

    def _on_stream(self) -> contextlib.AbstractContextManager[Any]:
        """Where the guard's work goes: the kernel's stream (on a GPU), so that it is ordered
        with the launches."""
        import torch

        return contextlib.nullcontext() if self.torch_stream is None else torch.cuda.stream(self.torch_stream)

    def _wait(self) -> None:
        if self.torch_stream is not None:
            self.torch_stream.synchronize()

    @property
    def _outputs(self) -> tuple[ArgSpec, ...]:
        return output_args(self.kernel)

    def _swappable(self) -> list[ArgSpec]:
        return [a for a in self.kernel.args if a.role in ("in", "inout") and a.init.kind in RANDOM_INITS
                and self.tensors[a.name].numel() >= 2]  # fmt: skip

    @property
    def swapped_elements(self) -> int:
        return sum(min(2 * self.swaps, self.tensors[a.name].numel()) for a in self._swappable())

    def prepare(self, sample: int | None) -> None:
        """Outside the timed window, before launch ``self.launches + 1``: new inputs for a timed
        launch (elements exchanged), outputs poisoned, ``inout`` buffers restored."""

        with self._on_stream():
            if sample is not None:
                for arg in self._swappable():
                    self._exchange(arg, sample)
            for arg in self._outputs:
                if arg.role == "out":
                    poison_(self.tensors[arg.name])
                else:
                    self.tensors[arg.name].copy_(self.pristine[arg.name])
        self.launches += 1
        if sample is not None:
            self.last_sample = sample

    def _exchange(self, arg: ArgSpec, sample: int) -> None:
        source = self.pristine if arg.role == "inout" else self.tensors
        flat = source[arg.name].view(-1)
        where, sources = self.exchanges[arg.name]
        row = sample % where.shape[0]
        flat[where[row]] = flat[sources[row]]

    def inspect(self, sample: int | None) -> None:
        """Outside the timed window, after the launch: count what it left poisoned (on the GPU,
        read at the end); compare with the reference when the launch is one to check."""

        with self._on_stream():
            for arg in self._outputs:
                if arg.role == "out":
                    count = poison_mask(self.tensors[arg.name]).sum()
                    self.poison_counts.append((self.launches, sample, arg.name, count))
        if self.launches == 1:
            self.first = {a.name: self.tensors[a.name].clone() for a in self._outputs}
            self._check(None)
        elif sample is not None and sample in self.checked:
            self._check(sample)

    def _inputs_now(self) -> dict[str, torch.Tensor]:
        """The inputs the last launch had (an ``inout`` buffer's value before it ran)."""
        return {n: self.pristine.get(n, t).clone() for n, t in self.tensors.items()}

    def _check(self, sample: int | None) -> None:
        self._wait()
        expected = evaluate_reference(self.kernel, self._inputs_now())
        spec = self.kernel.spec
        outputs = tuple(
            compare(a.name, self.tensors[a.name], e, tolerance_for(a.dtype, spec.atol, spec.rtol),
                    poisoned=a.role == "out")
            for a, e in zip(self._outputs, expected, strict=True)
        )  # fmt: skip
        self.results.append(CheckedLaunch(self.launches, sample, outputs))

    def finish(self, launch_once: Callable[[], None]) -> TimedCheck:
        """Check the last timed launch, then run the first launch's inputs again (``launch_once()``
        enqueues one launch on the kernel's stream) and compare with the first launch."""
        import torch

        last = self.last_sample
        if last is not None and all(c.sample != last for c in self.results):
            self._check(last)
        with self._on_stream():
            for name, value in self.original.items():
                self.tensors[name].copy_(value)
            self.pristine = {n: self.original[n].clone() for n in self.pristine}
        self.prepare(None)
        launch_once()
        self.inspect(None)
        self._wait()
        spec = self.kernel.spec
        bitwise = not self.nondeterministic
        repeated: list[Comparison] = []
        for arg in self._outputs:
            tolerance = tolerance_for(arg.dtype, 0.0, 0.0) if bitwise else tolerance_for(
                arg.dtype, spec.atol, spec.rtol)  # fmt: skip
            repeated.append(compare(arg.name, self.tensors[arg.name], self.first[arg.name], tolerance,
                                    poisoned=arg.role == "out"))  # fmt: skip
        repeat = Repeat(self.launches, bitwise, tuple(repeated), self.nondeterministic)
        counts = torch.stack([c[3] for c in self.poison_counts]).tolist() if self.poison_counts else []
        unwritten = tuple(
            Unwritten(launch, sample, name, int(n))
            for (launch, sample, name, _), n in zip(self.poison_counts, counts, strict=True)
            if n
        )
        return TimedCheck(self.launches, tuple(self.results), unwritten, repeat, self.swapped_elements)


def rehearse(guard: LaunchGuard, launch: Callable[[], None], *, warmups: int, samples: int) -> TimedCheck:
    """The launches of a measurement, in its order and with ``guard``'s checks, without a clock:
    ``warmups`` warm-up launches, ``samples`` timed ones, then the repeat. ``launch()`` runs the
    kernel once, to completion (the model interpreter, on CPU tensors)."""
    for sample in [None] * warmups + list(range(samples)):
        guard.prepare(sample)
        launch()
        guard.inspect(sample)
    return guard.finish(launch)
