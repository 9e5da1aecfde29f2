"""Python API for notebooks: the stored runs, their figures and series as pandas DataFrames.

    import gpudissect
    runs = gpudissect.open()                  # the default store, read-only (or open("x.sqlite"), open("export.json"))
    run = runs.latest()                       # or runs[3] (run id 3), list(runs)
    run.figures()                             # one row per figure: key, value, unit, kind, method, spread, check, ...
    run.series("latency_vs_footprint")        # the points of every series with that name or figure name

pandas is an optional extra (`pip install gpudissect[api]`), imported only when a DataFrame is asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import GpuDissectError
from .exportschema import dumps  # strict JSON: NaN and infinities as null (exportschema's rule)
from .models import BenchResult, Figure, RunInfo, Series

if TYPE_CHECKING:
    import pandas as pd


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise GpuDissectError("DataFrames need pandas: pip install 'gpudissect[api]' (or pip install pandas)") from None
    return pandas


def require_pyarrow() -> None:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise GpuDissectError(
            "--format parquet needs pyarrow: pip install 'gpudissect[api]' (or pip install pyarrow)"
        ) from None


def figure_rows(figures: list[Figure]) -> list[dict[str, Any]]:
    rows = []
    for f in figures:
        ok = f.check == "ok"
        rows.append(
            {
                "suite": f.suite,
                "bench": f.bench,
                "key": f.key,
                # a failed check has no number: NaN, never the value it may have carried
                "value": float(f.value) if ok and isinstance(f.value, int | float) else float("nan"),
                "text": f.value if isinstance(f.value, str) else None,
                "unit": f.unit,
                "kind": f.kind,
                "method": f.method,
                "spread_min": f.spread[0] if f.spread else None,
                "spread_max": f.spread[1] if f.spread else None,
                "check": f.check,
                "note": f.note,
            }
        )
    return rows


def sample_rows(series: list[Series]) -> list[dict[str, Any]]:
    rows = []
    for s in series:
        for i, p in enumerate(s.points):
            rows.append(
                {
                    "suite": s.suite,
                    "bench": s.bench,
                    "series": s.name,
                    "figure": s.figure or s.name,
                    "idx": i,
                    "x": p.x,
                    "y": p.y,
                    "y_min": p.y_min,
                    "y_max": p.y_max,
                    "reps": p.reps,
                    "x_label": s.x_label,
                    "x_unit": s.x_unit,
                    "y_label": s.y_label,
                    "y_unit": s.y_unit,
                    "extra": dumps(p.extra, sort_keys=True, default=str) if p.extra else None,
                }
            )
    return rows


def parquet_table(export: dict[str, Any]) -> Any:
    """One pyarrow table of a run's export: figure rows and sample rows (column `record` says which);
    the run's facts and benchmark statuses ride along as JSON in the schema metadata."""
    import pyarrow as pa

    from .exportio import records_from_export

    _run, _benches, series, figures = records_from_export(export)
    cols = [
        "record",
        "suite",
        "bench",
        "name",
        "figure",
        "idx",
        "x",
        "value",
        "text",
        "y_min",
        "y_max",
        "reps",
        "unit",
        "x_unit",
        "kind",
        "method",
        "check",
        "note",
    ]
    rows: list[dict[str, Any]] = []
    for f in figure_rows(figures):
        rows.append(
            {
                "record": "figure",
                "name": f["key"],
                "y_min": f["spread_min"],
                "y_max": f["spread_max"],
                **{k: f[k] for k in ("suite", "bench", "value", "text", "unit", "kind", "method", "check", "note")},
            }
        )
    for p in sample_rows(series):
        rows.append(
            {
                "record": "sample",
                "name": p["series"],
                "value": p["y"],
                "unit": p["y_unit"],
                "note": p["extra"],
                **{k: p[k] for k in ("suite", "bench", "figure", "idx", "x", "y_min", "y_max", "reps", "x_unit")},
            }
        )
    schema = pa.schema(
        [
            ("record", pa.string()),
            ("suite", pa.string()),
            ("bench", pa.string()),
            ("name", pa.string()),
            ("figure", pa.string()),
            ("idx", pa.int64()),
            ("x", pa.float64()),
            ("value", pa.float64()),
            ("text", pa.string()),
            ("y_min", pa.float64()),
            ("y_max", pa.float64()),
            ("reps", pa.int64()),
            ("unit", pa.string()),
            ("x_unit", pa.string()),
            ("kind", pa.string()),
            ("method", pa.string()),
            ("check", pa.string()),
            ("note", pa.string()),
        ],
        metadata={
            b"gpudissect.run": dumps(export["run"], default=str).encode(),
            b"gpudissect.benches": dumps(export.get("benches", []), default=str).encode(),
        },
    )
    return pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows], schema=schema)


class Run:
    """One stored run; records are read when first asked for."""

    def __init__(self, info: RunInfo, loader: Any):
        self.info = info
        self._loader = loader  # () -> (benches, series, figures)

    def __repr__(self) -> str:
        i = self.info
        return f"<gpudissect run {i.id}: {i.gpu_name} ({i.arch}), {i.mode}, {i.status}, started {i.started}>"

    @property
    def id(self) -> int:
        return self.info.id

    @cached_property
    def _records(self) -> tuple[list[BenchResult], list[Series], list[Figure]]:
        return self._loader()

    def figure_records(self) -> list[Figure]:
        return list(self._records[2])

    def series_records(self) -> list[Series]:
        return list(self._records[1])

    def figures(self) -> pd.DataFrame:
        """One row per figure; `value` is NaN where the check failed or the value is text (see `text`)."""
        return _pandas().DataFrame(
            figure_rows(self._records[2]),
            columns=[
                "suite",
                "bench",
                "key",
                "value",
                "text",
                "unit",
                "kind",
                "method",
                "spread_min",
                "spread_max",
                "check",
                "note",
            ],
        )

    def series_names(self) -> list[str]:
        return sorted({s.name for s in self._records[1]} | {s.figure for s in self._records[1] if s.figure})

    def series(self, name: str | None = None) -> pd.DataFrame:
        """Points of the series called `name` (a series name, a figure name, or bench/name); all if None."""
        chosen = [
            s
            for s in self._records[1]
            if name is None or name in (s.name, s.figure, f"{s.bench}/{s.name}", f"{s.bench}/{s.figure}")
        ]
        if not chosen:
            raise KeyError(f"no series {name!r} in run {self.id}; series: {', '.join(self.series_names()) or 'none'}")
        return _pandas().DataFrame(sample_rows(chosen))

    def benches(self) -> pd.DataFrame:
        rows = []
        for b in self._records[0]:
            d = asdict(b)
            tele = d.pop("telemetry") or {}
            d["sm_clock_mhz_median"] = tele.get("sm_clock_mhz_median")
            d["throttle_reasons"] = ", ".join(tele.get("throttle_reasons") or [])
            rows.append(d)
        return _pandas().DataFrame(rows)


class Runs:
    """The runs of a store (read-only) or of one export file, by id."""

    def __init__(self, runs: list[Run], source: Path):
        self._runs = {r.id: r for r in runs}
        self.source = source

    def __repr__(self) -> str:
        return f"<gpudissect runs of {self.source}: {sorted(self._runs)}>"

    def __len__(self) -> int:
        return len(self._runs)

    def __iter__(self) -> Iterator[Run]:
        return iter(self._runs[i] for i in sorted(self._runs))

    def __getitem__(self, run_id: int) -> Run:
        if run_id not in self._runs:
            raise KeyError(f"no run {run_id} in {self.source}; runs: {sorted(self._runs)}")
        return self._runs[run_id]

    def ids(self) -> list[int]:
        return sorted(self._runs)

    def latest(self) -> Run:
        if not self._runs:
            raise GpuDissectError(f"no runs in {self.source}")
        return self._runs[max(self._runs)]

    def table(self) -> pd.DataFrame:
        return _pandas().DataFrame([asdict(r.info) for r in self])


def open(db: str | Path | None = None) -> Runs:
    """The runs of the store `db` (default: $GPUDISSECT_DB or the per-user store), opened read-only;
    a path ending in .json (or .json.gz) opens one exported run instead."""
    if db is not None and str(db).lower().endswith((".json", ".json.gz")):
        from .exportio import from_export

        info, benches, series, figures = from_export(Path(db))
        return Runs([Run(info, lambda: (benches, series, figures))], Path(db).expanduser())
    from .store import Store

    store = Store(db, read_only=True)

    def loader(rid: int) -> Any:
        return lambda: (store.benches(rid), store.series(rid), store.figures(rid))

    return Runs([Run(info, loader(info.id)) for info in store.runs()], store.path)
