"""Embedded SQLite store: runs, per-benchmark status, raw samples (series) and figures.

Each benchmark's results are written in one transaction as soon as it ends, so an interrupted
run keeps everything finished before the interruption.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import GpuDissectError
from .models import BenchResult, Figure, Point, RunInfo, Series, Telemetry

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  gpu_name TEXT, gpu_uuid TEXT, sm_count INTEGER, l2_bytes INTEGER,
  sm_clock_max_mhz REAL, mem_clock_max_mhz REAL, mem_bus_bits INTEGER,
  driver TEXT, cuda TEXT, nvrtc TEXT, tool_version TEXT, arch TEXT, mode TEXT,
  started TEXT NOT NULL, ended TEXT, status TEXT NOT NULL,
  selection TEXT NOT NULL DEFAULT '{}', extra TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS benches (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
  started TEXT, ended TEXT, seconds REAL, telemetry TEXT,
  PRIMARY KEY (run_id, suite, bench)
);
CREATE TABLE IF NOT EXISTS series (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, name TEXT NOT NULL,
  x_label TEXT, x_unit TEXT, y_label TEXT, y_unit TEXT, plot TEXT, figure TEXT, params TEXT
);
CREATE TABLE IF NOT EXISTS samples (
  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL, x REAL, y REAL, y_min REAL, y_max REAL, reps INTEGER, extra TEXT,
  PRIMARY KEY (series_id, idx)
);
CREATE TABLE IF NOT EXISTS figures (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, key TEXT NOT NULL,
  value TEXT NOT NULL, unit TEXT, kind TEXT NOT NULL, method TEXT,
  spread_min REAL, spread_max REAL, checked TEXT NOT NULL, note TEXT,
  PRIMARY KEY (run_id, key)
);
"""


def default_db_path() -> Path:
    env = os.environ.get("GPUDISSECT_DB")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base).expanduser() / "gpudissect" / "gpudissect.sqlite"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _value_out(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that can neither write nor create anything next to the store.

    A WAL store whose -wal file is absent has no open writer, so it is opened immutable (a plain
    read-only open would leave -wal/-shm files behind, and fails in a read-only directory); with a
    writer present those files exist already and a plain mode=ro open shares them safely."""
    wal = path.with_name(path.name + "-wal")
    flags = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
    uri = f"{path.resolve().as_uri()}?{flags}"
    return sqlite3.connect(uri, uri=True, timeout=30)


class Store:
    """The SQLite store. `read_only=True` (every command that only reads) opens it with a read-only
    URI, creates nothing, and says clearly when the path is missing or not a gpudissect store."""

    def __init__(self, path: Path | str | None = None, read_only: bool = False):
        self.path = Path(path).expanduser() if path else default_db_path()
        self.read_only = read_only
        if self.path.is_dir():
            raise GpuDissectError(f"store {self.path} is a directory; --db takes a file")
        if read_only:
            self._open_read_only()
        else:
            self._open_for_writing()

    def _open_read_only(self) -> None:
        if not self.path.exists():
            raise GpuDissectError(
                f"no store at {self.path}: `gpudissect run` or `gpudissect import` creates one "
                "(or pass --db / set GPUDISSECT_DB)"
            )
        if self.path.stat().st_size == 0:
            raise GpuDissectError(f"{self.path} is an empty file, not a gpudissect store")
        try:
            self.db = _connect_read_only(self.path)
        except sqlite3.Error as e:
            raise GpuDissectError(f"cannot open the store {self.path}: {e}") from None
        self.db.row_factory = sqlite3.Row
        self._check_schema()

    def _open_for_writing(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise GpuDissectError(
                f"cannot create the store's directory {self.path.parent}: {e.strerror or e}"
            ) from None
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            self.db.row_factory = sqlite3.Row
            if self.path.stat().st_size > 0:
                self._check_schema()  # an existing file must be our store before anything is written to it
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.execute("PRAGMA journal_mode = WAL")  # readers never block a run that writes
            with self.db:
                self.db.executescript(_SCHEMA)
                self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.Error as e:
            raise GpuDissectError(f"cannot write the store {self.path}: {e}") from None

    def _check_schema(self) -> None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as e:
            self.db.close()
            if "no such table" in str(e):
                raise GpuDissectError(f"{self.path} is an SQLite database but not a gpudissect store") from None
            raise GpuDissectError(f"{self.path} is not a gpudissect store ({e})") from None
        version = int(row[0]) if row and str(row[0]).isdigit() else 0
        if version > SCHEMA_VERSION:
            self.db.close()
            raise GpuDissectError(
                f"{self.path} was written by a newer gpudissect (store schema {version}, "
                f"this one reads {SCHEMA_VERSION}): upgrade gpudissect"
            )

    def close(self) -> None:
        self.db.close()

    # ---- runs --------------------------------------------------------------------------
    def create_run(self, info: RunInfo) -> int:
        d = asdict(info)
        d.pop("id")
        d["selection"] = json.dumps(d["selection"])
        d["extra"] = json.dumps(d["extra"])
        cols = ", ".join(d)
        with self.db:
            cur = self.db.execute(f"INSERT INTO runs ({cols}) VALUES ({', '.join('?' * len(d))})", tuple(d.values()))
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET ended = ?, status = ? WHERE id = ?", (now(), status, run_id))

    def reopen_run(self, run_id: int) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET ended = NULL, status = 'running' WHERE id = ?", (run_id,))

    def run(self, run_id: int | None = None) -> RunInfo:
        """A run by id; the latest one when id is None."""
        if run_id is None:
            row = self.db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise GpuDissectError(f"no runs in {self.path}: run `gpudissect run` first")
        else:
            row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise GpuDissectError(f"no run {run_id} in {self.path} (see `gpudissect runs`)")
        d = dict(row)
        d["selection"] = json.loads(d["selection"] or "{}")
        d["extra"] = json.loads(d["extra"] or "{}")
        return RunInfo(**d)

    def runs(self) -> list[RunInfo]:
        ids = [r[0] for r in self.db.execute("SELECT id FROM runs ORDER BY id")]
        return [self.run(i) for i in ids]

    # ---- one benchmark's results, atomically ------------------------------------------
    def save_bench(
        self,
        result: BenchResult,
        series: list[Series] = (),
        figures: list[Figure] = (),  # type: ignore[assignment]
    ) -> None:
        rid = result.run_id
        tele = json.dumps(asdict(result.telemetry)) if result.telemetry else None
        with self.db:  # one transaction: all of a benchmark or nothing
            # a resumed benchmark replaces what an earlier attempt left
            self.db.execute(
                "DELETE FROM series WHERE run_id = ? AND suite = ? AND bench = ?",
                (rid, result.suite, result.bench),
            )
            self.db.execute(
                "DELETE FROM figures WHERE run_id = ? AND suite = ? AND bench = ?",
                (rid, result.suite, result.bench),
            )
            self.db.execute(
                "INSERT OR REPLACE INTO benches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    result.suite,
                    result.bench,
                    result.status,
                    result.message,
                    result.started,
                    result.ended,
                    result.seconds,
                    tele,
                ),
            )
            self._insert(rid, series, figures)

    def _insert(self, rid: int, series: Iterable[Series], figures: Iterable[Figure]) -> None:
        """Series (with their samples) and figures of run `rid`, inside the caller's transaction."""
        for s in series:
            cur = self.db.execute(
                "INSERT INTO series (run_id, suite, bench, name, x_label, x_unit, y_label, y_unit,"
                " plot, figure, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    s.suite,
                    s.bench,
                    s.name,
                    s.x_label,
                    s.x_unit,
                    s.y_label,
                    s.y_unit,
                    s.plot,
                    s.figure,
                    json.dumps(s.params, default=str),
                ),
            )
            sid = cur.lastrowid
            self.db.executemany(
                "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (sid, i, p.x, p.y, p.y_min, p.y_max, p.reps, json.dumps(p.extra) if p.extra else None)
                    for i, p in enumerate(s.points)
                ],
            )
        for f in figures:
            self.db.execute(
                "INSERT OR REPLACE INTO figures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    f.suite,
                    f.bench,
                    f.key,
                    str(f.value),
                    f.unit,
                    f.kind,
                    f.method,
                    f.spread[0] if f.spread else None,
                    f.spread[1] if f.spread else None,
                    f.check,
                    f.note,
                ),
            )

    def import_run(self, run: RunInfo, benches: list[BenchResult], series: list[Series], figures: list[Figure]) -> int:
        """A run read from an export, stored under a new id in one transaction (all of it or nothing)."""
        same = self.db.execute(
            "SELECT id FROM runs WHERE gpu_uuid = ? AND started = ? AND mode = ?", (run.gpu_uuid, run.started, run.mode)
        ).fetchone()
        if same is not None:
            raise GpuDissectError(
                f"this run (GPU {run.gpu_uuid}, started {run.started}) is already in {self.path} as run {same[0]}"
            )
        d = asdict(run)
        d.pop("id")
        d["selection"] = json.dumps(d["selection"])
        d["extra"] = json.dumps(d["extra"])
        with self.db:
            cur = self.db.execute(
                f"INSERT INTO runs ({', '.join(d)}) VALUES ({', '.join('?' * len(d))})", tuple(d.values())
            )
            rid = int(cur.lastrowid)
            for r in benches:
                tele = json.dumps(asdict(r.telemetry)) if r.telemetry else None
                self.db.execute(
                    "INSERT OR REPLACE INTO benches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (rid, r.suite, r.bench, r.status, r.message, r.started, r.ended, r.seconds, tele),
                )
            self._insert(rid, series, figures)
        return rid

    # ---- reading back ------------------------------------------------------------------
    def benches(self, run_id: int) -> list[BenchResult]:
        out = []
        for r in self.db.execute("SELECT * FROM benches WHERE run_id = ? ORDER BY started", (run_id,)):
            tele = Telemetry(**json.loads(r["telemetry"])) if r["telemetry"] else None
            out.append(
                BenchResult(
                    r["run_id"],
                    r["suite"],
                    r["bench"],
                    r["status"],
                    r["message"],
                    r["started"],
                    r["ended"],
                    r["seconds"],
                    tele,
                )
            )
        return out

    def series(self, run_id: int) -> list[Series]:
        out = []
        for r in self.db.execute("SELECT * FROM series WHERE run_id = ? ORDER BY id", (run_id,)):
            pts = [
                Point(p["x"], p["y"], p["y_min"], p["y_max"], p["reps"], json.loads(p["extra"]) if p["extra"] else {})
                for p in self.db.execute("SELECT * FROM samples WHERE series_id = ? ORDER BY idx", (r["id"],))
            ]
            out.append(
                Series(
                    r["suite"],
                    r["bench"],
                    r["name"],
                    r["x_label"],
                    r["x_unit"],
                    r["y_label"],
                    r["y_unit"],
                    pts,
                    r["plot"],
                    r["figure"],
                    json.loads(r["params"] or "{}"),
                )
            )
        return out

    def figures(self, run_id: int) -> list[Figure]:
        out = []
        for r in self.db.execute("SELECT * FROM figures WHERE run_id = ? ORDER BY suite, bench, key", (run_id,)):
            spread = (r["spread_min"], r["spread_max"]) if r["spread_min"] is not None else None
            out.append(
                Figure(
                    r["suite"],
                    r["bench"],
                    r["key"],
                    _value_out(r["value"]),
                    r["unit"],
                    r["kind"],
                    r["method"],
                    spread,
                    r["checked"],
                    r["note"] or "",
                )
            )
        return out

    def export(self, run_id: int) -> dict[str, Any]:
        return {
            "format": "gpudissect-export",
            "schema_version": SCHEMA_VERSION,
            "run": asdict(self.run(run_id)),
            "benches": [asdict(b) for b in self.benches(run_id)],
            "figures": [asdict(f) for f in self.figures(run_id)],
            "series": [asdict(s) for s in self.series(run_id)],
        }

    def iter_csv_rows(self, run_id: int) -> Iterator[list[Any]]:
        yield ["kind", "suite", "bench", "name_or_key", "x", "y_or_value", "y_min", "y_max", "unit", "note"]
        for f in self.figures(run_id):
            yield [
                "figure",
                f.suite,
                f.bench,
                f.key,
                "",
                f.value,
                f.spread[0] if f.spread else "",
                f.spread[1] if f.spread else "",
                f.unit,
                f.kind + "/" + f.check,
            ]
        for s in self.series(run_id):
            for p in s.points:
                yield ["sample", s.suite, s.bench, s.name, p.x, p.y, p.y_min, p.y_max, f"{s.x_unit}->{s.y_unit}", ""]
