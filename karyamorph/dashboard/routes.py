"""The pages and fragments that read the store: the page itself, the run list, one run's tiles,
pinning a baseline, a run's report, the searches, the SQL tile and this machine's devices.

Each handler opens the store for its own duration (:mod:`karyamorph.dashboard.access`); a
problem with the store (busy, damaged, missing) is a message in the tile, not an error page.
"""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from karyamorph.dashboard.queries import evaluations, searches
from karyamorph.dashboard.render import render
from karyamorph.dashboard.report import report_html
from karyamorph.dashboard.run_list import FilterChoices, RunFilter, RunPage, filter_choices, run_page
from karyamorph.dashboard.run_view import load_view
from karyamorph.dashboard.search_view import search_view
from karyamorph.dashboard.sql import ReadOnlyError, run_sql
from karyamorph.dashboard.state import form_fields, state_of
from karyamorph.dashboard.workbench import initial_workbench
from karyamorph.harness.pipeline import STAGE_TYPES
from karyamorph.kernel.limits import ARCHES
from karyamorph.store.errors import StoreError

STATIC = "static"


def _html(template: str, **context: Any) -> HTMLResponse:
    return HTMLResponse(render(template, static=STATIC, **context))


def _offset(request: Request) -> int:
    text = request.query_params.get("offset", "0")
    return int(text) if text.isdigit() else 0


async def index(request: Request) -> Response:
    """The whole page: workbench, the newest runs, and the run named by ``?run=`` if any."""
    state = state_of(request)
    wanted = request.query_params.get("run")

    def read() -> dict[str, Any]:
        # One visit to the store for the whole page: each open reads every table once.
        page, choices, view, error, initial = None, None, None, "", None
        if state.db.exists:
            try:
                with state.db.reading() as store:
                    page = run_page(store)
                    choices = filter_choices(store)
                    initial = initial_workbench(state, store)
                    view = load_view(store, wanted, state.pinned) if wanted else None
            except StoreError as exc:  # a busy or damaged store, or no run with the id asked for
                error = str(exc)
        initial = initial or initial_workbench(state, None)
        return {"page": page, "choices": choices, "view": view, "error": error, "initial": initial}

    context = await run_in_threadpool(read)
    initial = context.pop("initial")
    return _html(
        "index.html", db_path=str(state.db.path), examples=state.example_names(),
        archs=sorted(ARCHES, key=lambda a: (len(a), a)), stage_names=list(STAGE_TYPES),
        form=initial.form, toml=initial.toml, toml_error="", form_error="", live=True,
        initial=initial.as_json(), **context,
    )  # fmt: skip


async def runs(request: Request) -> Response:
    """The run list with its filters (``?offset=``, and the fields of :meth:`RunFilter.from_query`)."""
    state = state_of(request)
    where = RunFilter.from_query(request.query_params)

    def read() -> tuple[RunPage | None, FilterChoices | None, str]:
        if not state.db.exists:
            return None, None, ""
        try:
            with state.db.reading() as store:
                return run_page(store, where, offset=_offset(request)), filter_choices(store), ""
        except StoreError as exc:
            return None, None, str(exc)

    page, choices, error = await run_in_threadpool(read)
    return _html("_runs.html", page=page, choices=choices, error=error)


async def run(request: Request) -> Response:
    """Every tile of one run."""
    state = state_of(request)
    run_id = request.path_params["run_id"]

    def read() -> str:
        try:
            with state.db.reading() as store:
                view = load_view(store, run_id, state.pinned)
        except StoreError as exc:
            return f'<p class="error">{escape(str(exc))}</p>'
        return render("_run.html", view=view, live=True, static=STATIC)

    return HTMLResponse(await run_in_threadpool(read))


async def pin(request: Request) -> Response:
    """Pin ``?run=`` as the baseline the comparison tile uses; answer with its tiles again."""
    state = state_of(request)
    state.pinned = request.query_params.get("run") or None
    request.path_params["run_id"] = state.pinned or ""
    return await run(request)


async def unpin(request: Request) -> Response:
    """Forget the pinned baseline; answer with the tiles of ``?run=``."""
    state = state_of(request)
    state.pinned = None
    request.path_params["run_id"] = request.query_params.get("run", "")
    return await run(request)


async def report(request: Request) -> Response:
    """The run's static report, as a file to save."""
    state = state_of(request)
    run_id = request.path_params["run_id"]
    try:
        html = await run_in_threadpool(report_html, state.db, run_id)
    except StoreError as exc:
        return Response(str(exc), status_code=404, media_type="text/plain")
    name = f"{run_id[:8]}.html"
    return HTMLResponse(html, headers={"content-disposition": f'attachment; filename="{name}"'})


async def search_list(request: Request) -> Response:
    """The searches tile: every search, and the newest one opened."""
    state = state_of(request)

    def read() -> dict[str, Any]:
        if not state.db.exists:
            return {"searches": (), "view": None, "error": ""}
        try:
            with state.db.reading() as store:
                found = searches(store)
                view = search_view(found[0], evaluations(store, found[0].search_id)) if found else None
        except StoreError as exc:
            return {"searches": (), "view": None, "error": str(exc)}
        return {"searches": found, "view": view, "error": ""}

    return _html("_searches.html", **await run_in_threadpool(read))


async def search(request: Request) -> Response:
    """One search: leaderboard and best-so-far curve."""
    state = state_of(request)
    search_id = request.path_params["search_id"]

    def read() -> str:
        try:
            with state.db.reading() as store:
                found = next((s for s in searches(store) if s.search_id == search_id), None)
                if found is None:
                    return f'<p class="error">no search {escape(search_id)}</p>'
                view = search_view(found, evaluations(store, search_id))
        except StoreError as exc:
            return f'<p class="error">{escape(str(exc))}</p>'
        return render("_search.html", view=view)

    return HTMLResponse(await run_in_threadpool(read))


async def sql(request: Request) -> Response:
    """The SQL tile's answer: the rows, or why the statement was refused or failed."""
    state = state_of(request)
    text = (await form_fields(request)).get("sql", "")
    try:
        result = await run_in_threadpool(run_sql, state.db, text)
    except (ReadOnlyError, StoreError) as exc:
        return _html("_sql.html", error=str(exc), result=None)
    return _html("_sql.html", error="", result=result)


async def machine(request: Request) -> Response:
    """This machine's devices and toolchain (asked once, in a process of its own)."""
    found = await run_in_threadpool(state_of(request).machine.get)
    return _html("_machine.html", machine=found)
