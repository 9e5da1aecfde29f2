"""Embedded SQLite store: runs, per-benchmark status, raw samples (series) and figures.

What it promises: each benchmark's results are written in one transaction as soon as it ends, so an
interrupted run (or a full disk) keeps everything finished before; an import is one transaction too, all of
a run or nothing. Writers take the write lock when their transaction begins (BEGIN IMMEDIATE) and wait for
one another (busy timeout); readers never block them (WAL) and are never blocked for long. Creating the
store, checking a file is one and upgrading an older one happen in one such transaction, so processes that
open a new store at once all find it complete. Non-finite numbers follow exportschema's rule: NaN is NULL
(SQLite's own choice), read back as NaN where a number is required.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from .errors import GpuDissectError
from .exportschema import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    NAN,
    dumps,
    finite_or_nan,
    finite_or_none,
    identity,
    json_safe,
)
from .exportschema import spread_or_none as _spread
from .models import BenchResult, Figure, Point, RunInfo, Series, Telemetry

# 2: runs.import_key, the identity of the export a run was imported from (UNIQUE)
# 3: runs.label and runs.source (what `runs` shows to tell runs apart)
SCHEMA_VERSION = 3
BUSY_TIMEOUT_S = 60.0  # a writer waits this long for another's transaction (a large import takes seconds)

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  gpu_name TEXT, gpu_uuid TEXT, sm_count INTEGER, l2_bytes INTEGER,
  sm_clock_max_mhz REAL, mem_clock_max_mhz REAL, mem_bus_bits INTEGER,
  driver TEXT, cuda TEXT, nvrtc TEXT, tool_version TEXT, arch TEXT, mode TEXT,
  started TEXT NOT NULL, ended TEXT, status TEXT NOT NULL,
  selection TEXT NOT NULL DEFAULT '{}', extra TEXT NOT NULL DEFAULT '{}',
  import_key TEXT, label TEXT NOT NULL DEFAULT '', source TEXT NOT NULL DEFAULT ''
)""",
    """CREATE TABLE IF NOT EXISTS benches (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
  started TEXT, ended TEXT, seconds REAL, telemetry TEXT,
  PRIMARY KEY (run_id, suite, bench)
)""",
    """CREATE TABLE IF NOT EXISTS series (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, name TEXT NOT NULL,
  x_label TEXT, x_unit TEXT, y_label TEXT, y_unit TEXT, plot TEXT, figure TEXT, params TEXT
)""",
    """CREATE TABLE IF NOT EXISTS samples (
  series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL, x REAL, y REAL, y_min REAL, y_max REAL, reps INTEGER, extra TEXT,
  PRIMARY KEY (series_id, idx)
)""",
    """CREATE TABLE IF NOT EXISTS figures (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  suite TEXT NOT NULL, bench TEXT NOT NULL, key TEXT NOT NULL,
  value TEXT NOT NULL, unit TEXT, kind TEXT NOT NULL, method TEXT,
  spread_min REAL, spread_max REAL, checked TEXT NOT NULL, note TEXT,
  PRIMARY KEY (run_id, key)
)""",
)
# the same export is stored once, however many processes import it at the same time
_IMPORT_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS runs_import_key ON runs(import_key)"
_T = TypeVar("_T")
_SQLITE_MAGIC = b"SQLite format 3\x00"


class AlreadyImported(GpuDissectError):
    """The export (or the run it holds) is in the store already, as run `run_id`; nothing was added."""

    def __init__(self, message: str, run_id: int):
        super().__init__(message)
        self.run_id = run_id


def expand_path(path: str | Path, what: str = "path") -> Path:
    """`path` with a leading ~ or ~user expanded; an unknown user is one clear error, not a traceback."""
    try:
        return Path(path).expanduser()
    except RuntimeError:  # "Could not determine home directory" for ~nosuchuser
        raise GpuDissectError(f"{what} {str(path)!r}: no such user's home directory") from None


def default_db_path() -> Path:
    env = os.environ.get("GPUDISSECT_DB")
    if env:
        return expand_path(env, "GPUDISSECT_DB")
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return expand_path(base, "XDG_DATA_HOME") / "gpudissect" / "gpudissect.sqlite"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _value_out(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _wal_file(path: Path) -> bool:
    """Whether the file is an SQLite database in WAL mode (header bytes 18-19), without opening it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(20)
    except OSError:
        return False
    return len(head) == 20 and head.startswith(_SQLITE_MAGIC) and head[18] == head[19] == 2


def _cannot_create_beside(path: Path) -> bool:
    """Whether SQLite could not create the -shm a WAL reader needs: a read-only mount, a directory this
    process may not write, or a file and directory without a write bit for anyone."""
    parent = path.resolve().parent
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY or not os.access(parent, os.W_OK):
            return True
        return not (path.stat().st_mode & 0o222) and not (parent.stat().st_mode & 0o222)
    except OSError:
        return False


def _stamp(path: Path) -> tuple[int, ...]:
    st = path.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _connect_read_only(path: Path) -> tuple[sqlite3.Connection, tuple[int, ...] | None]:
    """A connection that writes nothing and leaves nothing behind, and stays correct while another
    process writes; with the file's stamp when it had to be opened immutable (see below), else None.
    `immutable` only where SQLite offers nothing else: a writer's checkpoint rewrites pages under an
    immutable reader ("database disk image is malformed"), so such a read is checked afterwards."""
    uri = path.resolve().as_uri()
    if _wal_file(path) and not path.with_name(path.name + "-wal").exists():
        if _cannot_create_beside(path):
            # No writer now (no -wal), and SQLite cannot create the -shm a WAL reader needs (read-only
            # media, or a directory we may not write): immutable is the only way to read it. A writer
            # can still appear (the directory's owner), so Store.snapshot compares the file's stamp
            # after the read and refuses a read the file changed under.
            stamp = _stamp(path)
            return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=BUSY_TIMEOUT_S), stamp
        # A WAL store with no writer now: a mode=ro connection would create -wal and -shm and, unable
        # to checkpoint through a read-only handle, leave them behind, owned by the reader. A read-write
        # handle under query_only follows the same WAL locking, writes no data, and SQLite deletes those
        # files when it closes last. (Where the file is not writable, SQLite opens it read-only.)
        db = sqlite3.connect(f"{uri}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_S)
        db.execute("PRAGMA query_only = ON")
        return db, None
    # a rollback-journal store (a copy, say) creates nothing when read; a writer's -wal is shared safely
    return sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S), None


def _read(method: Callable[..., _T]) -> Callable[..., _T]:
    """A reading method: one snapshot (see Store.snapshot)."""

    @functools.wraps(method)
    def reading(self: Store, *args: Any, **kwargs: Any) -> _T:
        with self.snapshot():
            return method(self, *args, **kwargs)

    return reading


class Store:
    """The SQLite store. `read_only=True` (every command that only reads) opens it without writing,
    creates nothing, and says clearly when the path is missing or not a gpudissect store. A read-only
    store holds no connection between reads: each read (a run, its figures, an export) has its own, so
    nothing stays open, and no -wal or -shm stays behind, after a reading command, even a failed one."""

    def __init__(self, path: Path | str | None = None, read_only: bool = False):
        self.path = expand_path(path, "the store") if path else default_db_path()
        self.read_only = read_only
        self._db: sqlite3.Connection | None = None
        self._stamp: tuple[int, ...] | None = None  # of a file read immutable (see _connect_read_only)
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
        with self.snapshot():
            if "meta" not in self._tables():
                raise self._foreign()
            self._check_version()

    def _connect(self) -> sqlite3.Connection:
        try:
            db, self._stamp = _connect_read_only(self.path)
        except (sqlite3.Error, OSError) as e:
            raise GpuDissectError(f"cannot open the store {self.path}: {e}") from None
        db.row_factory = sqlite3.Row
        return db

    @property
    def db(self) -> sqlite3.Connection:
        """The connection: a writer's own; for a read-only store the current read's, or one kept until
        close() for a caller that queries it directly."""
        if self._db is None:  # only a read-only store is ever without one
            self._db = self._connect()
        return self._db

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one state of the store (one connection of a read-only store, opened here and
        closed at the end); each read outside one is its own snapshot."""
        if self._db is not None:
            yield
            return
        self._db = self._connect()
        try:
            self._db.execute("BEGIN")  # a read transaction: every statement inside sees the same state
            yield
            if self._stamp is not None and _stamp(self.path) != self._stamp:
                raise GpuDissectError(f"{self.path} changed while it was read (a writer started): read it again")
        finally:
            db, self._db = self._db, None
            db.close()

    def _open_for_writing(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise GpuDissectError(
                f"cannot create the store's directory {self.path.parent}: {e.strerror or e}"
            ) from None
        try:
            # autocommit: every write goes through _write(), which begins its transaction explicitly
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as e:
            raise self._unwritable(e) from None
        self._db.row_factory = sqlite3.Row
        try:
            self.db.execute("PRAGMA foreign_keys = ON")
            # Checking that an existing file is our store, creating a new one and upgrading an old one are
            # one transaction: a process that opens the store while another creates it waits, then finds
            # it complete (never half made, never "not a gpudissect store").
            with self._write():
                self._prepare()
            self._use_wal()
        except GpuDissectError:
            self.close()
            raise
        except sqlite3.DatabaseError as e:
            self.close()
            if "not a database" in str(e):
                raise self._foreign(f" ({e})") from None
            raise self._unwritable(e) from None

    def _unwritable(self, e: sqlite3.Error) -> GpuDissectError:
        """A write refused: say read-only when SQLite says so (a read-only file, mount or directory),
        else what SQLite said."""
        text = str(e).lower()
        if (
            "readonly" in text
            or "read-only" in text
            or "unable to open" in text
            and not os.access(self.path.parent, os.W_OK)
        ):
            return GpuDissectError(f"the store {self.path} is read-only ({e}): nothing was written")
        return GpuDissectError(f"cannot write the store {self.path}: {e}")

    def _use_wal(self) -> None:
        """WAL mode, so readers never block a run that writes. Switching a new store to it needs an
        exclusive lock, and SQLite answers "database is locked" at once, without waiting, when the switch
        would deadlock with another process committing its opening transaction: that process is done in
        moments, so try again until the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self.db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _tables(self) -> set[str]:
        try:
            return {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as e:
            if "not a database" in str(e) or "malformed" in str(e):
                raise self._foreign(f" ({e})") from None
            raise GpuDissectError(f"cannot read the store {self.path}: {e}") from None

    def _foreign(self, why: str = "") -> GpuDissectError:
        if why:
            return GpuDissectError(f"{self.path} is not a gpudissect store{why}")
        return GpuDissectError(f"{self.path} is an SQLite database but not a gpudissect store")

    def _check_version(self) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else 0
        if version > SCHEMA_VERSION:
            raise GpuDissectError(
                f"{self.path} was written by a newer gpudissect (store schema {version}, "
                f"this one reads {SCHEMA_VERSION}): upgrade gpudissect"
            )
        return version

    def _prepare(self) -> None:
        """Inside the opening transaction: create the store in an empty file, or check and upgrade ours."""
        tables = self._tables()
        if tables and "meta" not in tables:
            raise self._foreign()
        version = self._check_version() if tables else SCHEMA_VERSION
        for sql in _TABLES:
            self.db.execute(sql)
        if version < 2 and "import_key" not in {r[1] for r in self.db.execute("PRAGMA table_info(runs)")}:
            self.db.execute("ALTER TABLE runs ADD COLUMN import_key TEXT")
        have = {r[1] for r in self.db.execute("PRAGMA table_info(runs)")}
        for col in ("label", "source"):
            if version < 3 and col not in have:
                self.db.execute(f"ALTER TABLE runs ADD COLUMN {col} TEXT NOT NULL DEFAULT ''")
        self.db.execute(_IMPORT_INDEX)
        if version < SCHEMA_VERSION:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction holding the write lock from its start: no other writer can slip in
        between what it reads and what it writes, and it never fails half-way on a stale snapshot."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # the first error is the one to report
                    self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            if self.read_only:  # a writer's closed connection stays, so later use fails as closed
                self._db = None

    # ---- runs --------------------------------------------------------------------------
    @staticmethod
    def _run_row(info: RunInfo) -> dict[str, Any]:
        d = asdict(info)
        d.pop("id")
        d["selection"] = dumps(d["selection"], default=str)
        d["extra"] = dumps(d["extra"], default=str)
        return d

    def create_run(self, info: RunInfo) -> int:
        d = self._run_row(info)
        with self._write():
            cur = self.db.execute(
                f"INSERT INTO runs ({', '.join(d)}) VALUES ({', '.join('?' * len(d))})", tuple(d.values())
            )
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def finish_run(self, run_id: int, status: str) -> None:
        with self._write():
            self.db.execute("UPDATE runs SET ended = ?, status = ? WHERE id = ?", (now(), status, run_id))

    def reopen_run(self, run_id: int) -> None:
        with self._write():
            self.db.execute("UPDATE runs SET ended = NULL, status = 'running' WHERE id = ?", (run_id,))

    @_read
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
        d.pop("import_key", None)  # the store's bookkeeping, not a fact of the run (absent in old stores)
        d["selection"] = json.loads(d["selection"] or "{}")
        d["extra"] = json.loads(d["extra"] or "{}")
        for k in ("sm_clock_max_mhz", "mem_clock_max_mhz"):  # required numbers: NULL (a NaN) reads as NaN
            d[k] = finite_or_nan(d[k])
        return RunInfo(**d)

    @_read
    def runs(self) -> list[RunInfo]:
        ids = [r[0] for r in self.db.execute("SELECT id FROM runs ORDER BY id")]
        return [self.run(i) for i in ids]

    # ---- one benchmark's results, atomically ------------------------------------------
    def save_bench(
        self,
        result: BenchResult,
        series: list[Series] = (),  # type: ignore[assignment]
        figures: list[Figure] = (),  # type: ignore[assignment]
    ) -> None:
        rid = result.run_id
        with self._write():  # one transaction: all of a benchmark or nothing
            # a resumed benchmark replaces what an earlier attempt left
            self.db.execute(
                "DELETE FROM series WHERE run_id = ? AND suite = ? AND bench = ?",
                (rid, result.suite, result.bench),
            )
            self.db.execute(
                "DELETE FROM figures WHERE run_id = ? AND suite = ? AND bench = ?",
                (rid, result.suite, result.bench),
            )
            self._insert_bench(rid, result)
            self._insert(rid, series, figures)

    def _insert_bench(self, rid: int, r: BenchResult) -> None:
        tele = dumps(asdict(r.telemetry)) if r.telemetry else None
        self.db.execute(
            "INSERT OR REPLACE INTO benches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (rid, r.suite, r.bench, r.status, r.message, r.started, r.ended, r.seconds, tele),
        )

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
                    dumps(s.params, default=str),
                ),
            )
            sid = cur.lastrowid
            self.db.executemany(
                "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (sid, i, p.x, p.y, p.y_min, p.y_max, p.reps, dumps(p.extra, default=str) if p.extra else None)
                    for i, p in enumerate(s.points)
                ),
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
        """A run read from an export, stored under a new id in one transaction (all of it or nothing).

        An export is identified by its content (exportschema.identity), stored with the run under a UNIQUE
        index; a run is also known by its GPU, start time and mode, so a run exported from this store or
        another snapshot of one imported already is not stored twice. Both are checked inside the write
        transaction: of processes importing the same export at once, one stores it and the others get
        AlreadyImported."""
        key = identity(run, benches, series, figures)
        d = self._run_row(run) | {"import_key": key}
        try:
            with self._write():
                self._refuse_if_present(run, key)
                cur = self.db.execute(
                    f"INSERT INTO runs ({', '.join(d)}) VALUES ({', '.join('?' * len(d))})", tuple(d.values())
                )
                rid = int(cur.lastrowid)  # type: ignore[arg-type]
                for r in benches:
                    self._insert_bench(rid, r)
                self._insert(rid, series, figures)
        except sqlite3.IntegrityError:
            # UNIQUE(import_key): only reachable if a writer bypassed the check above; still no duplicate
            self._refuse_if_present(run, key)
            raise
        return rid

    def _refuse_if_present(self, run: RunInfo, key: str) -> None:
        row = self.db.execute(
            "SELECT id, import_key = ? FROM runs WHERE import_key = ? OR (gpu_uuid IS ? AND started = ? AND mode IS ?)"
            " ORDER BY import_key = ? DESC, id LIMIT 1",
            (key, key, run.gpu_uuid, run.started, run.mode, key),
        ).fetchone()
        if row is None:
            return
        what = f"GPU {run.gpu_uuid}, started {run.started}"
        if row[1]:
            raise AlreadyImported(
                f"this export ({what}) is already in {self.path}: already imported as run {row[0]}; nothing added",
                row[0],
            )
        raise AlreadyImported(f"this run ({what}) is already in {self.path} as run {row[0]}; nothing added", row[0])

    # ---- reading back ------------------------------------------------------------------
    @_read
    def benches(self, run_id: int) -> list[BenchResult]:
        out = []
        for r in self.db.execute("SELECT * FROM benches WHERE run_id = ? ORDER BY started, rowid", (run_id,)):
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
                    finite_or_none(r["seconds"]),
                    tele,
                )
            )
        return out

    @_read
    def series(self, run_id: int) -> list[Series]:
        out = []
        for r in self.db.execute("SELECT * FROM series WHERE run_id = ? ORDER BY id", (run_id,)).fetchall():
            pts = [
                # x and y are required: NULL (a NaN, which SQLite stores so) reads back as NaN
                Point(
                    NAN if x is None else x,
                    NAN if y is None else y,
                    lo,
                    hi,
                    reps,
                    json.loads(extra) if extra else {},
                )
                for x, y, lo, hi, reps, extra in self.db.execute(
                    "SELECT x, y, y_min, y_max, reps, extra FROM samples WHERE series_id = ? ORDER BY idx", (r["id"],)
                )
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

    @_read
    def figures(self, run_id: int) -> list[Figure]:
        out = []
        for r in self.db.execute("SELECT * FROM figures WHERE run_id = ? ORDER BY suite, bench, key", (run_id,)):
            out.append(
                Figure(
                    r["suite"],
                    r["bench"],
                    r["key"],
                    _value_out(r["value"]),
                    r["unit"],
                    r["kind"],
                    r["method"],
                    _spread(r["spread_min"], r["spread_max"]),
                    r["checked"],
                    r["note"] or "",
                )
            )
        return out

    @_read
    def export(self, run_id: int) -> dict[str, Any]:
        """The run as an export: plain JSON data, non-finite numbers already null (exportschema's rule),
        so any json.dumps of it is strict JSON."""
        return {
            "format": EXPORT_FORMAT,
            "schema_version": EXPORT_VERSION,
            "run": json_safe(asdict(self.run(run_id))),
            "benches": [json_safe(asdict(b)) for b in self.benches(run_id)],
            "figures": [json_safe(asdict(f)) for f in self.figures(run_id)],
            "series": [_series_out(s) for s in self.series(run_id)],
        }

    def iter_csv_rows(self, run_id: int) -> Iterator[list[Any]]:
        with self.snapshot():
            yield from self._csv_rows(run_id)

    def _csv_rows(self, run_id: int) -> Iterator[list[Any]]:
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


def _series_out(s: Series) -> dict[str, Any]:
    """asdict(s) made JSON-safe, without asdict's deep copy of every point."""
    return {
        "suite": s.suite,
        "bench": s.bench,
        "name": s.name,
        "x_label": s.x_label,
        "x_unit": s.x_unit,
        "y_label": s.y_label,
        "y_unit": s.y_unit,
        "points": [
            {
                "x": finite_or_none(p.x),
                "y": finite_or_none(p.y),
                "y_min": finite_or_none(p.y_min),
                "y_max": finite_or_none(p.y_max),
                "reps": p.reps,
                "extra": json_safe(p.extra) if p.extra else {},
            }
            for p in s.points
        ],
        "plot": s.plot,
        "figure": s.figure,
        "params": json_safe(s.params),
    }
