"""The one schema of an export: every field of every record is checked here, once, before a command reads
it (`import`, `report`/`show`/`compare` with an export, `gpudissect.open("x.json")`, cluster gathering), so
nothing that passes can fail later in a reader. The models mirror models.py field for field.

Non-finite numbers, on every path: JSON has no NaN or infinity, so every JSON gpudissect writes carries a
non-finite number as null (`json_safe`, and `allow_nan=False` on each dump). Reading back, null where a
number is required (a point's x and y, a figure's value, an end of a spread, a run's clocks) is NaN, and
null where a number is optional (y_min, y_max, seconds, telemetry) is absent (None); a NaN or Infinity
token an older gpudissect wrote reads the same way. So an infinity comes back as NaN, a spread with no
finite end as no spread, and export -> import -> export gives the same JSON. The store follows the same
rule (SQLite keeps NaN as NULL).
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, fields
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from .models import BenchResult, Figure, Point, RunInfo, Series, Telemetry

EXPORT_FORMAT = "gpudissect-export"
EXPORT_VERSION = 1  # of the JSON format; the store's schema version is another number (store.py)
INT64_MAX = 2**63 - 1  # SQLite's INTEGER
NAN = float("nan")
_M = TypeVar("_M", bound=BaseModel)


# ---- the non-finite rule ------------------------------------------------------------------------
def finite_or_none(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None


def finite_or_nan(v: float | None) -> float:
    return v if v is not None and math.isfinite(v) else NAN


def spread_or_none(lo: float | None, hi: float | None) -> tuple[float, float] | None:
    """A spread needs a finite end; a missing or non-finite end of one that has it is NaN."""
    if finite_or_none(lo) is None and finite_or_none(hi) is None:
        return None
    return finite_or_nan(lo), finite_or_nan(hi)


def json_safe(v: Any) -> Any:
    """`v` with every non-finite float turned into None and tuples into lists: what json.dumps with
    allow_nan=False accepts (other objects are left for its `default`)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [json_safe(x) for x in v]
    return v


def dumps(v: Any, **kw: Any) -> str:
    """json.dumps under the rule: non-finite numbers as null, never a NaN token."""
    return json.dumps(json_safe(v), allow_nan=False, **kw)


# ---- field types ---------------------------------------------------------------------------------
def _describe(v: Any) -> str:
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    if isinstance(v, int):
        s = str(v)
        return s if len(s) <= 24 else f"an integer of {len(s)} digits"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return "a text"
    return {list: "a list", tuple: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def _fail(kind: str, what: str, v: Any) -> PydanticCustomError:
    return PydanticCustomError(kind, "{what}, not {got}", {"what": what, "got": _describe(v)})


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise _fail("text", "must be a text", v)
    if not v.isascii():
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate such as "\ud800": not text SQLite can store
            raise PydanticCustomError("text", "holds a lone surrogate (not valid Unicode text)") from None
    return v


def _count(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise _fail("integer", "must be a whole number", v)
    if not 0 <= v <= INT64_MAX:
        raise _fail("integer", "must be a whole number from 0 to 2^63-1", v)
    return v


def _number_in(v: Any) -> float | None:
    """A number, null or non-finite as None; an integer beyond 64 bits is refused (it is no measurement)."""
    if type(v) is float:  # the common case first: this runs for every number of every point
        return v if math.isfinite(v) else None
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _fail("number", "must be a number", v)
    if isinstance(v, int):
        if abs(v) > INT64_MAX:
            raise _fail("number", "must be a number within 2^63", v)
        return float(v)
    return finite_or_none(v)


def _number(v: Any) -> float:
    return finite_or_nan(_number_in(v))


def _value(v: Any) -> float | str:
    if isinstance(v, str):
        return _text(v)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
        raise _fail("number", "must be a number or a text", v)
    return finite_or_nan(_number_in(v))


def _one_of(*allowed: str) -> PlainValidator:
    def check(v: Any) -> str:
        if v not in allowed or not isinstance(v, str):
            raise _fail("choice", f"must be one of {', '.join(allowed)}", v)
        return v

    return PlainValidator(check)


def _json_value(v: Any, depth: int = 0) -> Any:
    """Free-form JSON (params, extra, selection) under the same rules as the fields."""
    if depth > 64:
        raise PydanticCustomError("json", "is nested too deeply")
    if isinstance(v, dict):
        return {_text(k): _json_value(x, depth + 1) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_value(x, depth + 1) for x in v]
    if isinstance(v, str):
        return _text(v)
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        if abs(v) > INT64_MAX:
            raise _fail("number", "must be a number within 2^63", v)
        return v
    if isinstance(v, float):
        return finite_or_none(v)
    raise _fail("json", "must be JSON data", v)


def _json_object(v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _fail("object", "must be an object", v)
    return _json_value(v) if v else {}  # type: ignore[no-any-return]


def _spread(v: Any) -> tuple[float, float] | None:
    if v is None:
        return None
    if not isinstance(v, list | tuple) or len(v) != 2:
        raise _fail("spread", "must be a pair [min, max] or null", v)
    lo, hi = (_number_in(x) for x in v)
    return spread_or_none(lo, hi)


Text = Annotated[str, PlainValidator(_text)]
OptText = Annotated[str | None, PlainValidator(lambda v: None if v is None else _text(v))]
Count = Annotated[int, PlainValidator(_count)]
Number = Annotated[float, PlainValidator(_number)]
OptNumber = Annotated[float | None, PlainValidator(_number_in)]
Value = Annotated[float | str, PlainValidator(_value)]
Spread = Annotated[tuple[float, float] | None, PlainValidator(_spread)]
JsonObject = Annotated[dict[str, Any], PlainValidator(_json_object)]


class _Record(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class RunModel(_Record):
    id: Count
    gpu_name: Text
    gpu_uuid: OptText  # an export of a GPU whose UUID could not be read has none
    sm_count: Count
    l2_bytes: Count
    sm_clock_max_mhz: Number
    mem_clock_max_mhz: Number
    mem_bus_bits: Count
    driver: Text
    cuda: Text
    nvrtc: Text
    tool_version: Text
    arch: Text
    mode: Text
    started: Text
    ended: OptText
    status: Text
    selection: JsonObject = Field(default_factory=dict)
    extra: JsonObject = Field(default_factory=dict)
    label: Text = ""  # absent in exports before store schema 3
    source: Text = ""


class TelemetryModel(_Record):
    samples: Count
    sm_clock_mhz_median: OptNumber
    sm_clock_mhz_min: OptNumber
    sm_clock_mhz_max: OptNumber
    mem_clock_mhz_median: OptNumber
    power_w_median: OptNumber
    power_w_max: OptNumber
    temp_c_max: OptNumber
    throttle_reasons: list[Text] = Field(default_factory=list)


class BenchModel(_Record):
    run_id: Count
    suite: Text
    bench: Text
    status: Annotated[str, _one_of("ok", "failed", "crashed", "hung", "skipped", "interrupted")]
    message: Text
    started: Text
    ended: OptText
    seconds: OptNumber
    telemetry: TelemetryModel | None = None


class PointModel(_Record):
    x: Number
    y: Number
    y_min: OptNumber = None
    y_max: OptNumber = None
    reps: Count = 1
    extra: JsonObject = Field(default_factory=dict)


class SeriesModel(_Record):
    suite: Text
    bench: Text
    name: Text
    x_label: Text
    x_unit: Text
    y_label: Text
    y_unit: Text
    points: list[PointModel]
    plot: Text = "line"
    figure: Text = ""
    params: JsonObject = Field(default_factory=dict)


class FigureModel(_Record):
    suite: Text
    bench: Text
    key: Text
    value: Value
    unit: Text
    kind: Annotated[str, _one_of("measured", "derived", "assumed")]
    method: Text
    spread: Spread = None
    check: Annotated[str, _one_of("ok", "failed")] = "ok"
    note: Text = ""


class ExportModel(BaseModel):
    """A whole export. Unknown top-level keys are ignored (room for additions); records are strict."""

    model_config = ConfigDict(strict=True, extra="ignore")

    format: Annotated[str, _one_of(EXPORT_FORMAT)]
    schema_version: Count = 1
    run: RunModel
    benches: list[BenchModel] = Field(default_factory=list)
    figures: list[FigureModel] = Field(default_factory=list)
    series: list[SeriesModel] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> ExportModel:
        # the store keys figures by (run, key) and benchmarks by (run, suite, bench): a repeat would be
        # collapsed silently, so it is refused
        _first_repeat((f.key for f in self.figures), "figures", "key")
        _first_repeat((f"{b.suite}/{b.bench}" for b in self.benches), "benches", "suite/bench")
        return self


def _first_repeat(keys: Iterable[str], part: str, what: str) -> None:
    seen: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k in seen:
            text = f"{part}[{i}].{what}: {k!r} is repeated (first at {part}[{seen[k]}])"
            raise PydanticCustomError("repeat", "{text}", {"text": text})
        seen[k] = i


# ---- errors ------------------------------------------------------------------------------------------
class ExportError(ValueError):
    """What is wrong with an export, with the JSON path of the first bad field."""


_BUILTIN = {
    "missing": "is missing",
    "extra_forbidden": "is not a field of this record",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "list_type": "must be a list",
}


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(e: ValidationError, at: tuple[int | str, ...] = ()) -> str:
    err = e.errors(include_url=False)[0]
    where = _path((*at, *err["loc"]))
    if err["type"] == "repeat":
        return err["msg"]
    if err["type"] in _BUILTIN:
        what = _BUILTIN[err["type"]]
        text = what if err["type"] in ("missing", "extra_forbidden") else f"{what}, not {_describe(err['input'])}"
    else:
        text = err["msg"]
    return f"{where}: {text}" if where else text


# ---- the entry point -----------------------------------------------------------------------------------
@contextmanager
def bulk() -> Iterator[None]:
    """No cyclic garbage collection while hundreds of thousands of acyclic records are made: the
    collector's passes over them, not the work, would take most of the time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _check(model: type[_M], data: Any, at: tuple[int | str, ...] = ()) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ExportError(_message(e, at)) from None


def parse(data: Any) -> tuple[RunInfo, list[BenchResult], list[Series], list[Figure]]:
    """The models.py records of the export `data` (parsed JSON), checked against the schema; ExportError
    names the first bad field. The series, nearly all of an export's bulk, are checked and turned into
    records one at a time, so a large export is not held as JSON, models and records at once."""
    if not isinstance(data, dict) or not isinstance(data.get("series", []), list):
        _check(ExportModel, data)  # refused, with what is wrong
    with bulk():
        run, benches, figures = _head(_check(ExportModel, {**data, "series": []}))
        series = [_series(_check(SeriesModel, s, ("series", i))) for i, s in enumerate(data.get("series", []))]
    return run, benches, series, figures


def _head(m: ExportModel) -> tuple[RunInfo, list[BenchResult], list[Figure]]:
    r = m.run
    run = RunInfo(**{k: getattr(r, k) for k in RunModel.model_fields})
    benches = [
        BenchResult(
            b.run_id,
            b.suite,
            b.bench,
            b.status,  # type: ignore[arg-type]
            b.message,
            b.started,
            b.ended,
            b.seconds,
            Telemetry(**{k: getattr(b.telemetry, k) for k in TelemetryModel.model_fields}) if b.telemetry else None,
        )
        for b in m.benches
    ]
    figures = [
        Figure(f.suite, f.bench, f.key, f.value, f.unit, f.kind, f.method, f.spread, f.check, f.note)  # type: ignore[arg-type]
        for f in m.figures
    ]
    return run, benches, figures


def _series(s: SeriesModel) -> Series:
    # the schema's models carry the records' own field names
    points = [Point(**{k: getattr(p, k) for k in PointModel.model_fields}) for p in s.points]
    return Series(**{k: getattr(s, k) for k in SeriesModel.model_fields if k != "points"}, points=points)


def identity(run: RunInfo, benches: list[BenchResult], series: list[Series], figures: list[Figure]) -> str:
    """What identifies an export: a hash of its content less the ids a store gives (run id, the benches'
    run_id), benchmarks and figures in key order, so a re-export of an imported run has the identity of
    the export it came from. Hashed as the schema leaves the records (numbers as floats, NaN for a missing
    required number), which is why this JSON may hold NaN tokens: it is hashed, never written."""
    h = hashlib.sha256()

    def feed(v: Any) -> None:
        h.update(json.dumps(v, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8", "surrogatepass"))
        h.update(b"\n")

    # the label and source name the run, they are not its content: a relabelled run is the same run
    feed({k: v for k, v in asdict(run).items() if k not in ("id", "label", "source")})
    for b in sorted(benches, key=lambda b: (b.suite, b.bench)):
        feed({k: v for k, v in asdict(b).items() if k != "run_id"})
    for f in sorted(figures, key=lambda f: f.key):
        feed(asdict(f))
    for s in series:
        feed({f.name: getattr(s, f.name) for f in fields(s) if f.name != "points"})
        feed([[p.x, p.y, p.y_min, p.y_max, p.reps, p.extra] for p in s.points])
    return h.hexdigest()
