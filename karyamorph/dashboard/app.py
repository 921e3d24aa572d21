"""The Starlette application: the routes, the static files, and the token gate in front of all."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from karyamorph.dashboard import routes, workbench
from karyamorph.dashboard.auth import TokenGate
from karyamorph.dashboard.render import STATIC
from karyamorph.dashboard.state import State


def create_app(state: State, token: str) -> Starlette:
    """The dashboard for ``state``; every request must carry ``token`` (see :mod:`.auth`)."""
    app = Starlette(
        routes=[
            Route("/", routes.index),
            Route("/runs", routes.runs),
            Route("/runs/{run_id}", routes.run),
            Route("/pin", routes.pin, methods=["POST"]),
            Route("/unpin", routes.unpin, methods=["POST"]),
            Route("/report/{run_id}", routes.report),
            Route("/searches", routes.search_list),
            Route("/searches/{search_id}", routes.search),
            Route("/sql", routes.sql, methods=["POST"]),
            Route("/machine", routes.machine),
            Route("/api/check", workbench.check, methods=["POST"]),
            Route("/api/run", workbench.start_run, methods=["POST"]),
            Route("/api/runs/{run_id}/source", workbench.run_source),
            Route("/api/examples/{name}", workbench.example),
            Route("/spec/form", workbench.spec_form, methods=["POST"]),
            Route("/spec/toml", workbench.spec_toml, methods=["POST"]),
            Route("/jobs/{job_id}", workbench.job),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[Middleware(TokenGate, token=token)],
    )
    app.state.dashboard = state
    return app
