"""A spec run through the pipeline, as ``karyamorph run`` does it, with typed access to each stage."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.harness import pipeline
from karyamorph.harness.session import Outcome, run_spec_file
from karyamorph.harness.stages.base import StageResult, Status
from karyamorph.store import store_path


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished run: ``result["compile"]`` is that stage's :class:`StageResult` (``status``,
    ``data``, ``log``, ``seconds``); ``to_dict()`` is ``karyamorph run --format json``'s payload.

    Attributes
    ----------
    outcome : Outcome
        The harness's record of the run (:class:`karyamorph.harness.session.Outcome`).
    """

    outcome: Outcome = field(repr=False)

    @property
    def pipeline(self) -> pipeline.RunResult:
        """The pipeline's result: bound kernel, parsed PTX, target, toolchain, device, stages."""
        return self.outcome.result

    @property
    def run_id(self) -> str | None:
        """The run's id in the store; None when not stored (``store=False``, or bad input)."""
        return self.outcome.run_id

    @property
    def status(self) -> Status:
        """The worst stage status: error, fail, unknown, else pass (skips do not count)."""
        return self.pipeline.status

    @property
    def arch(self) -> str:
        """The target the run compiled for (``sm_90``)."""
        return self.pipeline.arch.name

    @property
    def bad_input(self) -> str | None:
        """ptxas's rejection of the PTX, mapped to its line; None when the compile stage passed."""
        return self.outcome.bad_input

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages that ran, in pipeline order."""
        return tuple(name for name, _ in self.pipeline.stages)

    @property
    def ptx(self) -> str:
        """The PTX that ran (compiled from the spec's CUDA source for the target, if it gave that)."""
        return self.pipeline.spec.ptx

    @property
    def sass(self) -> str | None:
        """The SASS text the sass stage read; None when it did not run or did not pass."""
        r = self.pipeline.result("sass")
        return str(r.data["text"]) if r is not None and r.status == Status.PASS else None

    def __getitem__(self, stage: str) -> StageResult:
        r = self.pipeline.result(stage)
        if r is None:
            raise KeyError(f"no stage {stage!r} in this run (stages run: {', '.join(self.stages)})")
        return r

    def __contains__(self, stage: object) -> bool:
        return stage in self.stages

    def __iter__(self) -> Iterator[str]:
        return iter(self.stages)

    def to_dict(self) -> dict[str, Any]:
        """The run as a JSON-ready dict: id, spec, arch, status, every stage, the prediction."""
        return self.outcome.as_json()


def run(
    spec: str | Path,
    arch: str | None = None,
    sizes: Mapping[str, int] | None = None,
    stages: Sequence[str] | None = None,
    store: bool = True,
    db: str | Path | None = None,
    *,
    label: str | None = None,
    timeout_s: float | None = None,
) -> RunResult:
    """Run the spec file ``spec`` through the pipeline, as ``karyamorph run`` does.

    Parameters
    ----------
    spec : str or Path
        The spec (``vadd.toml``).
    arch : str, optional
        The target (default: the GPU's, else the PTX's ``.target``, else sm_120).
    sizes : mapping of str to int, optional
        Overrides of the spec's ``[sizes]``.
    stages : sequence of str, optional
        The stages to run (default: all); GPU stages skip without a GPU.
    store : bool
        Write the run to the store (not when ptxas rejected the PTX).
    db : str or Path, optional
        The store file (default: ``$KARYAMORPH_DB``, else ``./karyamorph.duckdb``).
    label : str, optional
        Stored with the run.
    timeout_s : float, optional
        Seconds a GPU launch may run before it is killed.

    Raises
    ------
    SpecError, PtxError, ArchError, ToolchainError
        The spec, its PTX or the target cannot be used.
    StageSelectionError
        A stage name is unknown.
    StoreError
        The store cannot be written.
    """
    outcome = run_spec_file(
        Path(spec), arch=arch, db=store_path(db) if store else None, timeout_s=timeout_s,
        sizes=dict(sizes) if sizes else None, only=list(stages) if stages is not None else None,
        label=label,
    )  # fmt: skip
    return RunResult(outcome)
