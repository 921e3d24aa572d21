"""The workbench: the editor's checks, the spec form and its TOML, and runs started from the page.

What the workbench opens with: the spec named on the command line, else the newest run's spec
and PTX, else the first example kernel, else an empty kernel to fill in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from karyamorph.dashboard.diagnostics import check_ptx
from karyamorph.dashboard.jobs import StageSelectionError
from karyamorph.dashboard.render import render
from karyamorph.dashboard.spec_form import ArgRow, SpecForm, doc_from_fields, doc_from_toml, toml_text
from karyamorph.dashboard.state import State, form_fields, state_of
from karyamorph.isa.parser import decode
from karyamorph.kernel.spec import SpecError
from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError
from karyamorph.store.reading import RunNotFoundError

_SKELETON_PTX = """.version 8.7
.target sm_80
.address_size 64

.visible .entry kernel(
    .param .u64 .ptr .global .align 16 out
)
{
    ret;
}
"""
_SKELETON_SPEC = {
    "kernel": {"ptx": "kernel.ptx", "entry": "kernel"},
    "launch": {"grid": [1], "block": [32]},
    "args": [{"name": "out", "role": "out", "dtype": "f32", "shape": [32]}],
}


@dataclass(frozen=True, slots=True)
class Workbench:
    """What the editor and the form hold: the PTX, the spec as form and as TOML, and where they
    came from (shown to the user)."""

    ptx: str
    form: SpecForm
    toml: str
    origin: str

    def as_json(self) -> dict[str, Any]:
        return {"ptx": self.ptx, "toml": self.toml, "origin": self.origin}


def _bench(doc: dict[str, Any], ptx: str, origin: str) -> Workbench:
    return Workbench(ptx, SpecForm.from_doc(doc), toml_text(doc), origin)


def from_spec_file(path: Path) -> Workbench:
    """The workbench for a spec file and the PTX it names (or holds inline).

    Raises
    ------
    SpecError
        The file cannot be read, is not TOML, or names a PTX file that cannot be read.
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(str(path), f"cannot read the spec: {exc.strerror}") from None
    doc = doc_from_toml(text, path.name)
    kernel = doc.get("kernel", {})
    if "source" in kernel:
        return _bench(doc, str(kernel["source"]), f"spec {path}")
    ptx_path = path.parent / str(kernel.get("ptx", ""))
    try:
        ptx = decode(ptx_path.read_bytes(), str(ptx_path))
    except OSError as exc:
        raise SpecError(f"{path.name}: kernel.ptx", f"cannot read {ptx_path}: {exc.strerror}") from None
    return _bench(doc, ptx, f"spec {path}")


def from_run(store: Store, run_id: str) -> Workbench:
    """The workbench for a stored run: its spec text and its PTX.

    Raises
    ------
    StoreError
        No such run, or the store cannot be read.
    SpecError
        The stored spec text is not TOML.
    """
    row = store.query(
        "SELECT r.spec_text, k.ptx FROM runs r JOIN kernels k ON k.kernel_hash = r.kernel_hash "
        "AND k.entry = r.entry WHERE r.run_id = ?",
        [run_id],
    ).rows
    if not row:
        raise RunNotFoundError(f"no run {run_id} in {store.path}")
    spec_text, ptx = row[0]
    return _bench(doc_from_toml(spec_text, "the run's spec"), ptx, f"run {run_id[:8]}")


def initial_workbench(state: State, store: Store | None) -> Workbench:
    """What the page opens with (see the module's docstring); ``store`` is the page's open
    store (None when there is no database yet)."""
    if state.spec is not None:
        try:
            return from_spec_file(state.spec)
        except SpecError:
            pass  # the command checked the file; if it changed since, fall back to the rest
    if store is not None:
        try:
            newest = store.query("SELECT run_id FROM runs ORDER BY created_at DESC, run_id LIMIT 1").rows
            if newest:
                return from_run(store, str(newest[0][0]))
        except (StoreError, SpecError):
            pass  # an unreadable newest run must not keep the page from opening
    for name in state.example_names():
        try:
            assert state.examples is not None
            return from_spec_file(state.examples / f"{name}.toml")
        except SpecError:
            continue
    return _bench(_SKELETON_SPEC, _SKELETON_PTX, "a new kernel")


async def check(request: Request) -> Response:
    """``{"ptx", "arch"}`` -> the editor's marks (parser error, else ptxas's errors and warnings)."""
    body = await request.json()
    result = await run_in_threadpool(check_ptx, str(body.get("ptx", "")), body.get("arch") or None)
    return JSONResponse(result.as_dict())


def _form_html(form: SpecForm, error: str = "") -> HTMLResponse:
    return HTMLResponse(render("_spec_form.html", form=form, form_error=error))


async def spec_form(request: Request) -> Response:
    """The form again: from ``toml`` when given, else from the posted fields (``?add=arg`` adds
    an empty argument row)."""
    fields = await form_fields(request)
    try:
        if "toml" in fields:
            form = SpecForm.from_doc(doc_from_toml(fields["toml"]))
        else:
            form = SpecForm.from_doc(doc_from_fields(fields))
    except SpecError as exc:
        return _form_html(SpecForm.from_doc(_SKELETON_SPEC), str(exc))
    if fields.get("add") == "arg":
        form = dataclasses.replace(form, args=(*form.args, ArgRow("", "in", "f32")))
    return _form_html(form)


async def spec_toml(request: Request) -> Response:
    """The posted form as TOML (or why it is not a spec yet)."""
    fields = await form_fields(request)
    try:
        text, error = toml_text(doc_from_fields(fields)), ""
    except SpecError as exc:
        text, error = "", str(exc)
    return HTMLResponse(render("_toml.html", toml=text, toml_error=error))


async def start_run(request: Request) -> Response:
    """``{"ptx", "fields", "arch", "stages", "label"}`` -> ``{"job_id"}`` of a new run, or
    ``{"error"}`` (status 400) when the form is not a spec or the stage selection is empty."""
    state = state_of(request)
    body = await request.json()
    ptx = str(body.get("ptx", ""))
    fields = {str(k): str(v) for k, v in dict(body.get("fields", {})).items()}
    try:
        doc = doc_from_fields(fields, source=ptx)
        kernel = doc["kernel"]
        ptx_name = Path(kernel.get("ptx") or f"{kernel.get('entry') or 'kernel'}.ptx").name
        if "source" not in kernel:
            kernel["ptx"] = ptx_name
        chosen = body.get("stages")
        only = None if chosen is None else [str(s) for s in chosen]  # no list: every stage
        job = await run_in_threadpool(
            state.jobs.start, toml_text(doc), ptx, ptx_name, arch=body.get("arch") or None, only=only,
            skip=[], label=str(body.get("label") or "").strip() or None,
        )  # fmt: skip
    except (SpecError, StageSelectionError) as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    return JSONResponse({"job_id": job.job_id})


async def job(request: Request) -> Response:
    """The run status tile of a run started here."""
    found = state_of(request).jobs.get(request.path_params["job_id"])
    if found is None:
        return HTMLResponse('<p class="error">no such run on this page (the server was restarted?)</p>')
    return HTMLResponse(render("_job.html", job=found))


async def run_source(request: Request) -> Response:
    """A stored run's PTX and spec TOML, for "edit in the workbench"."""
    state = state_of(request)

    def read() -> Workbench:
        with state.db.reading() as store:
            return from_run(store, request.path_params["run_id"])

    try:
        bench = await run_in_threadpool(read)
    except (StoreError, SpecError) as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    return JSONResponse(bench.as_json())


async def example(request: Request) -> Response:
    """An example kernel's PTX and spec TOML."""
    state = state_of(request)
    name = request.path_params["name"]
    if name not in state.example_names() or state.examples is None:
        return JSONResponse({"error": f"no example {name!r}"}, status_code=404)
    try:
        bench = await run_in_threadpool(from_spec_file, state.examples / f"{name}.toml")
    except SpecError as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    return JSONResponse(bench.as_json())
