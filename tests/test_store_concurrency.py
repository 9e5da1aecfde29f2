"""Issue 27 items 10-12: the store under concurrent processes (spawned, as separate `gpudissect` commands
would be): readers during writes on a store of realistic size, several processes creating one store, the
same export imported by several processes at once."""

from __future__ import annotations

import multiprocessing as mp
import random
import sqlite3
import time
from dataclasses import replace

import pytest

from helpers import ROOT

BIG = ROOT / "results" / "h100-sxm5-80gb" / "runs" / "memory-full" / "export.json.gz"  # ~20k points
SMALL = ROOT / "results" / "h100-sxm5-80gb" / "runs" / "app-quick" / "export.json.gz"
WORKERS = 6


def _wait(start_at: float) -> None:
    time.sleep(max(0.0, start_at - time.time()))


def _warm(_: int) -> int:
    import gpudissect.exportio
    import gpudissect.store  # noqa: F401 - imported before the trials, so they start together

    return 0


def _outcome(e: BaseException) -> tuple[str, str]:
    return ("error", f"{type(e).__name__}: {e}")


# ---- workers (module level: spawned processes import them) ----------------------------------------------
def _create(path: str, start_at: float) -> tuple[str, str]:
    from gpudissect.store import Store

    _wait(start_at)
    try:
        s = Store(path)
        s.runs()
        s.close()
        return ("ok", "")
    except Exception as e:  # noqa: BLE001 - what a process would have printed is the result
        return _outcome(e)


def _import(path: str, export: str, start_at: float) -> tuple[str, str]:
    from gpudissect.exportio import from_export
    from gpudissect.store import Store

    records = from_export(export)
    _wait(start_at)
    try:
        s = Store(path)
        try:
            return ("stored", str(s.import_run(*records)))
        finally:
            s.close()
    except Exception as e:  # noqa: BLE001
        run_id = getattr(e, "run_id", None)
        return ("already", str(run_id)) if run_id is not None else _outcome(e)


def _reader(path: str, until: float) -> tuple[int, list[str]]:
    from gpudissect.store import Store

    reads, errors = 0, []
    while time.time() < until:
        try:
            s = Store(path, read_only=True)
            with s.snapshot():  # one state of the store: a run listed is a run whose records are there
                runs = s.runs()
                for r in random.sample(runs, min(2, len(runs))):
                    figs, series = s.figures(r.id), s.series(r.id)
                    if not figs or not series or any(not x.points for x in series):
                        errors.append(f"run {r.id}: {len(figs)} figures, {len(series)} series")
            s.close()
            reads += 1
        except Exception as e:  # noqa: BLE001
            errors.append(f"{type(e).__name__}: {e}")
    return reads, errors


def _writer(path: str, export: str, until: float, tag: int) -> tuple[int, list[str]]:
    """Imports under new identities and deletes older runs, so pages are rewritten and reused."""
    from gpudissect.exportio import from_export
    from gpudissect.store import Store

    run, benches, series, figures = from_export(export)
    done, errors, i = 0, [], 0
    while time.time() < until:
        i += 1
        try:
            s = Store(path)
            s.import_run(replace(run, started=f"w{tag}-{i}"), benches, series, figures)
            old = s.db.execute("SELECT id FROM runs WHERE started LIKE ? ORDER BY id LIMIT 1", (f"w{tag}-%",))
            row = old.fetchone()
            if i % 2 == 0 and row:
                s.db.execute("DELETE FROM runs WHERE id = ?", (row[0],))
                s.db.commit()  # a no-op where the store writes in autocommit
            s.close()
            done += 1
        except Exception as e:  # noqa: BLE001
            errors.append(f"{type(e).__name__}: {e}")
    return done, errors


@pytest.fixture(scope="module")
def pool():
    with mp.get_context("spawn").Pool(WORKERS) as p:
        p.map(_warm, range(WORKERS))
        yield p


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    """A store of tens of MB: the committed memory-full export imported under several identities."""
    from gpudissect.exportio import from_export
    from gpudissect.store import Store

    path = tmp_path_factory.mktemp("big") / "big.sqlite"
    run, benches, series, figures = from_export(BIG)
    s = Store(path)
    for i in range(20):
        s.import_run(replace(run, started=f"copy-{i}"), benches, series, figures)
    s.close()
    assert path.stat().st_size > 16 << 20
    return path


def test_a_read_survives_a_checkpoint_that_rewrites_the_file(tmp_path):
    """Item 10, step by step: a read starts on a WAL store that no writer holds (no -wal file), then a
    writer deletes, imports and checkpoints. An immutable reader would now read rewritten pages
    ("database disk image is malformed"); a WAL reader keeps its snapshot."""
    from gpudissect.exportio import from_export
    from gpudissect.store import Store

    path = tmp_path / "s.sqlite"
    run, benches, series, figures = from_export(BIG)
    s = Store(path)
    for i in range(4):
        s.import_run(replace(run, started=f"old-{i}"), benches, series, figures)
    s.close()
    assert not path.with_name("s.sqlite-wal").exists()
    reader = Store(path, read_only=True)
    total = reader.db.execute("SELECT count(*) FROM samples").fetchone()[0]
    scan = reader.db.execute("SELECT series_id, idx, y FROM samples")
    seen = len(scan.fetchmany(1000))
    w = Store(path)
    for i in range(3):
        w.db.execute("DELETE FROM runs WHERE id = (SELECT min(id) FROM runs)")
        w.db.commit()  # a no-op where the store writes in autocommit
        w.import_run(replace(run, started=f"new-{i}"), benches, series, figures)
    w.close()  # the last writer out checkpoints the WAL into the file
    seen += len(scan.fetchall())
    assert seen == total
    reader.close()
    assert Store(path, read_only=True).db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_readers_during_writes_see_a_sound_store(pool, big_store):
    """Item 10: a reader never fails ("database disk image is malformed") while writers import and delete:
    read-only is never immutable where a writer may appear."""
    until = time.time() + 3
    writers = [pool.apply_async(_writer, (str(big_store), str(BIG), until, t)) for t in range(2)]
    readers = [pool.apply_async(_reader, (str(big_store), until)) for _ in range(3)]
    wrote = [w.get(timeout=60) for w in writers]
    read = [r.get(timeout=60) for r in readers]
    assert all(not errs for _, errs in wrote), wrote
    assert sum(n for n, _ in wrote) >= 2 and sum(n for n, _ in read) >= 3, (wrote, read)
    assert [e for _, errs in read for e in errs] == []
    with sqlite3.connect(big_store) as db:
        dup = db.execute("SELECT started, COUNT(*) FROM runs GROUP BY started HAVING COUNT(*) > 1").fetchall()
        assert dup == [] and db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_processes_creating_one_store_at_once(pool, tmp_path):
    """Item 11: creating, checking and upgrading the store is one transaction: six processes opening a new
    store at once all succeed, none calls it "not a gpudissect store" or finds it locked."""
    bad = []
    for trial in range(15):
        path = str(tmp_path / f"new{trial}.sqlite")
        start_at = time.time() + 0.15
        results = pool.starmap(_create, [(path, start_at)] * WORKERS)
        bad += [(trial, r) for r in results if r[0] != "ok"]
    assert bad == []


def test_the_same_export_imported_at_once_is_stored_once(pool, tmp_path):
    """Item 12: the duplicate check and the insert are one transaction, backed by a UNIQUE identity: one
    process stores the export, the others are told it is already there as that run."""
    from gpudissect.store import Store

    problems = []
    for trial in range(8):
        path = tmp_path / f"s{trial}.sqlite"
        Store(path).close()
        start_at = time.time() + 0.3
        results = pool.starmap(_import, [(str(path), str(SMALL), start_at)] * WORKERS)
        stored = [int(x) for kind, x in results if kind == "stored"]
        with sqlite3.connect(path) as db:
            ids = [r[0] for r in db.execute("SELECT id FROM runs")]
        if (
            len(stored) != 1
            or ids != stored
            or any(r != ("already", str(stored[0])) for r in results if r[0] != "stored")
        ):
            problems.append((trial, results, ids))
    assert problems == []
