"""The store's schema as numbered migrations: the only place that holds SQL DDL."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: what it does, and the statements that do it (run in order)."""

    description: str
    statements: tuple[str, ...]


# Foreign keys are deliberately not declared: DuckDB enforces them on every insert and forbids
# deleting a referenced row, which would make pruning old runs a multi-table dance. The
# columns named *_id / *_hash are the links; queries join on them.
#
# Dimension tables (devices, toolchains, kernels, sass) are keyed by content hash so that
# re-recording the same content is a no-op (INSERT ... ON CONFLICT DO NOTHING). The long
# tables (metrics, samples, findings) carry no index: an index would slow the bulk inserts
# and DuckDB's zone maps already make filtering by run_id cheap.
_INITIAL: tuple[str, ...] = (
    """CREATE TABLE schema_version (
        version INTEGER PRIMARY KEY,
        description VARCHAR NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL
    )""",
    """CREATE TABLE devices (
        device_id VARCHAR PRIMARY KEY,
        name VARCHAR NOT NULL,
        compute_capability VARCHAR NOT NULL,
        sm_count INTEGER NOT NULL,
        driver_version VARCHAR NOT NULL,
        properties JSON NOT NULL
    )""",
    """CREATE TABLE toolchains (
        toolchain_id VARCHAR PRIMARY KEY,
        ptxas_version VARCHAR NOT NULL,
        nvdisasm_version VARCHAR NOT NULL,
        cuobjdump_version VARCHAR NOT NULL,
        cuda_release VARCHAR NOT NULL,
        paths JSON NOT NULL
    )""",
    """CREATE TABLE kernels (
        kernel_hash VARCHAR NOT NULL,
        entry VARCHAR NOT NULL,
        ptx VARCHAR NOT NULL,
        PRIMARY KEY (kernel_hash, entry)
    )""",
    """CREATE TABLE campaigns (
        campaign_id VARCHAR PRIMARY KEY,
        name VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        params JSON NOT NULL
    )""",
    """CREATE TABLE searches (
        search_id VARCHAR PRIMARY KEY,
        campaign_id VARCHAR,
        name VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        params JSON NOT NULL
    )""",
    """CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY,
        kernel_hash VARCHAR NOT NULL,
        entry VARCHAR NOT NULL,
        spec_hash VARCHAR NOT NULL,
        spec_text VARCHAR NOT NULL,
        arch VARCHAR NOT NULL,
        launch JSON NOT NULL,
        device_id VARCHAR,
        toolchain_id VARCHAR,
        host VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        status VARCHAR NOT NULL,
        campaign_id VARCHAR,
        search_id VARCHAR
    )""",
    """CREATE TABLE stages (
        run_id VARCHAR NOT NULL,
        stage VARCHAR NOT NULL,
        position INTEGER NOT NULL,
        status VARCHAR NOT NULL,
        seconds DOUBLE NOT NULL,
        log VARCHAR NOT NULL,
        data JSON NOT NULL,
        PRIMARY KEY (run_id, stage)
    )""",
    """CREATE TABLE metrics (
        run_id VARCHAR NOT NULL,
        stage VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        value DOUBLE NOT NULL,
        unit VARCHAR NOT NULL
    )""",
    """CREATE TABLE samples (
        run_id VARCHAR NOT NULL,
        i INTEGER NOT NULL,
        ns DOUBLE NOT NULL
    )""",
    """CREATE TABLE sass (
        sass_hash VARCHAR PRIMARY KEY,
        kernel_hash VARCHAR NOT NULL,
        arch VARCHAR NOT NULL,
        text VARCHAR NOT NULL
    )""",
    # A link table, because one SASS text serves every run of the same kernel and arch.
    """CREATE TABLE run_sass (
        run_id VARCHAR NOT NULL,
        sass_hash VARCHAR NOT NULL,
        PRIMARY KEY (run_id, sass_hash)
    )""",
    """CREATE TABLE findings (
        run_id VARCHAR NOT NULL,
        position INTEGER NOT NULL,
        tool VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        location VARCHAR NOT NULL,
        detail JSON NOT NULL
    )""",
)

# GPU validation of the model's instruction forms: one row per validation run, one per form
# (including forms left out, with the reason in detail), one per differing case. Bit patterns
# are UBIGINT (every PTX value of up to 64 bits fits); operands are JSON {slot: "0x..."}.
_VALIDATION: tuple[str, ...] = (
    """CREATE TABLE validations (
        validation_id VARCHAR PRIMARY KEY,
        created_at TIMESTAMPTZ NOT NULL,
        arch VARCHAR NOT NULL,
        device_id VARCHAR,
        toolchain_id VARCHAR,
        host VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        params JSON NOT NULL,
        environment JSON NOT NULL
    )""",
    """CREATE TABLE validation_forms (
        validation_id VARCHAR NOT NULL,
        form VARCHAR NOT NULL,
        instruction VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        cases INTEGER NOT NULL,
        disagreements INTEGER NOT NULL,
        nan_bits INTEGER NOT NULL,
        unbounded INTEGER NOT NULL,
        unspecified INTEGER NOT NULL,
        max_ulp DOUBLE NOT NULL,
        detail VARCHAR NOT NULL,
        PRIMARY KEY (validation_id, form)
    )""",
    """CREATE TABLE validation_disagreements (
        validation_id VARCHAR NOT NULL,
        form VARCHAR NOT NULL,
        case_index INTEGER NOT NULL,
        slot VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        operands JSON NOT NULL,
        gpu_bits UBIGINT NOT NULL,
        model_bits UBIGINT NOT NULL,
        ulp DOUBLE
    )""",
)

# Where a run's spec came from and what its author called it: two kernels with one entry name
# (two versions of `vadd` in two folders) are told apart by these. NULL for older runs.
_RUN_ORIGIN: tuple[str, ...] = (
    "ALTER TABLE runs ADD COLUMN spec_path VARCHAR",
    "ALTER TABLE runs ADD COLUMN label VARCHAR",
)

# Every write of the store also records each table's row count here, in the same transaction;
# opening the store compares them with what the tables hold (karyamorph.store.integrity).
_INTEGRITY: tuple[str, ...] = (
    """CREATE TABLE store_integrity (
        table_name VARCHAR NOT NULL,
        row_count BIGINT NOT NULL,
        counted_at TIMESTAMPTZ NOT NULL
    )""",
)

# Each configuration a search evaluated, in order: its outcome (a time or the gate that failed
# it, with the gate's explanation), the run that holds its stages when it reached the pipeline,
# and the seconds each gate took. A search resumes from these rows and replays from them; its
# summary (the winner re-checked and re-timed, the torch baseline) is written when it ends.
_SEARCH_EVALUATIONS: tuple[str, ...] = (
    """CREATE TABLE search_evaluations (
        search_id VARCHAR NOT NULL,
        seq INTEGER NOT NULL,
        config_key VARCHAR NOT NULL,
        config JSON NOT NULL,
        time_ms DOUBLE,
        failure VARCHAR,
        detail VARCHAR NOT NULL,
        run_id VARCHAR,
        gates JSON NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (search_id, seq)
    )""",
    "ALTER TABLE searches ADD COLUMN summary JSON",
)

# What a campaign sweeps, one row per item (a spec file at sizes for an arch), and which run each
# item produced. ``state`` is pending, done (``run_id`` holds the run, whose ``item`` column
# names the item back) or failed (no run; ``reason`` says why). The run and its item's new state
# are written in one transaction, so an item is done exactly when its run is stored.
_CAMPAIGN_ITEMS: tuple[str, ...] = (
    "ALTER TABLE runs ADD COLUMN item VARCHAR",
    """CREATE TABLE campaign_items (
        campaign_id VARCHAR NOT NULL,
        item VARCHAR NOT NULL,
        position INTEGER NOT NULL,
        spec_path VARCHAR NOT NULL,
        arch VARCHAR,
        sizes JSON NOT NULL,
        state VARCHAR NOT NULL,
        attempts INTEGER NOT NULL,
        reason VARCHAR,
        run_id VARCHAR,
        updated_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (campaign_id, item)
    )""",
)

# Microbenchmarks (``karyamorph microbench``): one row per session (device, toolchain, options,
# the environment it ran in) and one per measured figure: its kind (latency, throughput, chase,
# bandwidth, ...), what it measures (a form or a benchmark name), the parameter swept (working
# set, warps per SM, stride), the median over repeats with its relative spread and the
# per-repeat values, the SM clock during the measurement, and a status (ok, folded, unmeasured,
# failed) with details as JSON. An unmeasured form is a row too, its value NaN and the reason in
# detail.
_MICROBENCH: tuple[str, ...] = (
    """CREATE TABLE microbench_runs (
        microbench_id VARCHAR PRIMARY KEY,
        created_at TIMESTAMPTZ NOT NULL,
        arch VARCHAR NOT NULL,
        device_id VARCHAR,
        toolchain_id VARCHAR,
        host VARCHAR NOT NULL,
        params JSON NOT NULL,
        environment JSON NOT NULL
    )""",
    """CREATE TABLE microbench (
        microbench_id VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        parameter VARCHAR NOT NULL,
        parameter_value DOUBLE NOT NULL,
        value DOUBLE NOT NULL,
        unit VARCHAR NOT NULL,
        spread DOUBLE NOT NULL,
        repeats INTEGER NOT NULL,
        samples DOUBLE[] NOT NULL,
        value_ns DOUBLE,
        clock_mhz DOUBLE,
        status VARCHAR NOT NULL,
        detail JSON NOT NULL
    )""",
)

# The winner of each finished search as the two texts `karyamorph run` needs: its spec (TOML whose
# [kernel] ptx is NAME.ptx, the PTX file beside it) and its PTX. They travel with the database and
# its datasets, so `karyamorph search export` reproduces a winner on any machine; a search stored
# before has no row (its winner is rendered again from its template).
_SEARCH_WINNERS: tuple[str, ...] = (
    """CREATE TABLE search_winners (
        search_id VARCHAR PRIMARY KEY,
        name VARCHAR NOT NULL,
        spec_toml VARCHAR NOT NULL,
        ptx VARCHAR NOT NULL,
        created_at TIMESTAMPTZ NOT NULL
    )""",
)

# version -> migration. Append only: a released version's statements never change, a schema
# change is a new entry with the next number.
MIGRATIONS: dict[int, Migration] = {
    1: Migration("initial tables", _INITIAL),
    2: Migration("GPU validation of instruction forms", _VALIDATION),
    3: Migration("runs remember their spec's path and a label", _RUN_ORIGIN),
    4: Migration("committed row counts, to find a damaged database", _INTEGRITY),
    5: Migration("each evaluation of a search, in order", _SEARCH_EVALUATIONS),
    6: Migration("campaign items, and the item each run of a campaign was", _CAMPAIGN_ITEMS),
    7: Migration("microbenchmarks: sessions and measured figures", _MICROBENCH),
    8: Migration("each finished search's winner as spec and PTX text", _SEARCH_WINNERS),
}

# One line on each table, for `karyamorph tables`; a migration that adds a table adds its line.
TABLES: dict[str, str] = {
    "schema_version": "One row per applied migration: its version, what it did, when.",
    "devices": "GPUs that ran something, stored once per distinct content (name, capability, driver).",
    "toolchains": "ptxas, nvdisasm and cuobjdump versions and paths, stored once per distinct set.",
    "kernels": "PTX text by content hash and entry name.",
    "campaigns": "Sweeps over specs, sizes and archs (the campaign file, its label, its definition "
    "hash); runs link to them by campaign_id.",
    "campaign_items": "Each item of a campaign (spec file, sizes, arch): pending, done (with its "
    "run) or failed (with the reason), and how many times it was tried.",
    "searches": "Searches over kernel variants; runs link to them by search_id.",
    "search_winners": "Each finished search's winner as text: its spec (TOML naming NAME.ptx) and "
    "its PTX, what `karyamorph search export` writes.",
    "runs": "One row per pipeline run: kernel, spec (text, path, label), arch, launch, status; "
    "a campaign's runs carry its campaign_id and their item.",
    "stages": "Each stage of a run: status, seconds, the tool's log and the stage's details (JSON).",
    "metrics": "Every number a stage reported: (run, stage, name, value, unit); NaN stays NaN.",
    "samples": "The timing stage's samples of a run, in nanoseconds, in the order taken.",
    "sass": "SASS text by kernel and arch, stored once per content.",
    "run_sass": "Which SASS text each run produced (one text serves every run of the same cubin).",
    "findings": "Structured findings of a run: sanitizer reports, correctness failures, model disagreements.",
    "validations": "One row per `model validate` run: arch, device, toolchain, parameters.",
    "validation_forms": "Each instruction form a validation ran or left out: cases, disagreements, "
    "the worst ulp, the reason.",
    "validation_disagreements": "Each case where the GPU's bits and the model's differ: operands "
    "and both results.",
    "search_evaluations": "Each configuration a search evaluated, in order: time or failure reason, "
    "the gate's explanation, the run holding its stages, seconds per gate.",
    "microbench_runs": "One row per `karyamorph microbench` session: arch, device, toolchain, options, "
    "environment (driver, clocks).",
    "microbench": "Each microbenchmark figure: kind, form or benchmark, swept parameter, median over "
    "repeats, unit, relative spread, per-repeat values, SM clock, status and details.",
    "store_integrity": "Each table's row count as of the last write, written in the write's own "
    "transaction; a table that holds another count is reported as damaged.",
}


def latest_version(migrations: dict[int, Migration]) -> int:
    """Return the highest version in ``migrations`` (0 for none)."""
    return max(migrations, default=0)


def pending(migrations: dict[int, Migration], current: int) -> list[tuple[int, Migration]]:
    """Return the migrations after ``current``, in order.

    Raises
    ------
    ValueError
        If the versions are not exactly 1, 2, ..., n (a gap would skip a schema step).
    """
    versions = sorted(migrations)
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migration versions must be 1..n without gaps, got {versions}")
    return [(v, migrations[v]) for v in versions if v > current]
