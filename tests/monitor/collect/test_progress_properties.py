"""The progress parser fed Spark's progress shapes with values changed and fields dropped at
random: it returns a well-typed batch or raises its own ProgressError, nothing else."""

import dataclasses
import json
import math
import types
import typing
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.collect.progress import ProgressError, parse_progress, parse_progress_json
from monitor.events import BatchProgress
from monitor.numbers import INT64_MAX, INT64_MIN
from tests.support.progress import fixture, progress_doc

TEMPLATES = [
    fixture(name)["progress"]
    for name in (
        "progress_kafka.json",
        "progress_rate_window.json",
        "progress_rate_dedup.json",
        "progress_first_batch.json",
    )
]
# One task's figures of the instrumented operator's observation (monitor.collect.observed).
TASK = {
    "batch": 2,
    "delay_ms": 10_000,
    "late_watermark_ms": 1_795_316_249_318,
    "partitions": {
        "t/0": {
            "records": 3,
            "min_ms": 1_795_316_251_368,
            "max_ms": 1_795_316_253_318,
            "late": 1,
            "samples": [["k", 1_795_316_240_000, 42]],
        }
    },
}
# Values past what the store keeps, of the wrong type, or that trip a careless conversion.
NASTY = st.sampled_from(
    [
        None,
        True,
        -1,
        INT64_MAX + 1,
        2**70,
        INT64_MIN - 1,
        9.3e18,
        1e300,
        math.inf,
        -math.inf,
        math.nan,
        "",
        "12",
        "NaN",
        "²",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        [],
        {},
        [1],
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.datetimes(timezones=st.timezones()).map(lambda moment: moment.isoformat())
)
# Half of the values put in place of a field are nasty ones, half are any JSON value.
REPLACEMENTS = st.one_of(
    NASTY,
    st.recursive(
        SCALARS,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=6,
    ),
)
# Partition names and offsets in the shapes Spark's sources report (see monitor.collect.offsets).
NAMES = st.sampled_from(["0", "1", "10", "²", "٣", "-1", "", "t"])
OFFSET = st.integers(0, 2_000) | st.integers(INT64_MAX - 1, INT64_MAX + 1) | NASTY
SHAPES = st.one_of(
    OFFSET,
    st.fixed_dictionaries({"logOffset": OFFSET}),
    st.dictionaries(NAMES, OFFSET, max_size=3),
    st.dictionaries(NAMES, st.dictionaries(NAMES, OFFSET, max_size=3), max_size=2),
)
OFFSETS = SHAPES | SHAPES.map(json.dumps)
SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def varied(draw: st.DrawFn, value: Any, one_in: int | None = None) -> Any:
    """`value` with, at any depth, fields dropped and values replaced: each one time in
    `one_in`, drawn once per document (so that some keep their required fields)."""
    one_in = one_in or draw(st.sampled_from([20, 8, 3]))
    if draw(st.integers(1, one_in)) == one_in:
        return draw(REPLACEMENTS)
    if isinstance(value, dict):
        return {
            key: draw(varied(item, one_in))
            for key, item in value.items()
            if draw(st.integers(1, one_in)) != one_in
        }
    if isinstance(value, list):
        return [draw(varied(item, one_in)) for item in value]
    return value


DOCUMENTS = st.one_of(*(varied(template) for template in TEMPLATES))


def observation(tasks: list[Any]) -> dict[str, Any]:
    """The observed metrics of the instrumented operator: each task's figures as JSON text."""
    return {"wmon": {"tasks": [json.dumps(task) for task in tasks]}}


def conforms(value: Any, hint: Any) -> bool:
    """Whether `value` has the type `hint` of monitor.events, with whole numbers that a 64-bit
    column holds and finite floats."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in args)
    if origin is tuple and args[-1] is Ellipsis:
        return isinstance(value, tuple) and all(conforms(item, args[0]) for item in value)
    if origin is tuple:
        return (
            isinstance(value, tuple) and len(value) == len(args) and all(map(conforms, value, args))
        )
    if origin is dict:
        return isinstance(value, dict) and all(
            conforms(key, args[0]) and conforms(item, args[1]) for key, item in value.items()
        )
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return isinstance(value, hint) and all(
            conforms(getattr(value, field.name), hints[field.name])
            for field in dataclasses.fields(hint)
        )
    checks = {
        int: lambda: type(value) is int and INT64_MIN <= value <= INT64_MAX,
        float: lambda: type(value) is float and math.isfinite(value),
        str: lambda: isinstance(value, str),
        type(None): lambda: value is None,
        typing.Any: lambda: True,
    }
    return checks[hint]()


def batch_or_progress_error(doc: Any) -> None:
    """Parse `doc`: a batch of the types monitor.events declares, or ProgressError."""
    try:
        batch = parse_progress(doc)
    except ProgressError:
        return
    assert conforms(batch, BatchProgress), batch


@SETTINGS
@given(DOCUMENTS)
def test_a_varied_progress_document_is_a_batch_or_a_progress_error(doc):
    batch_or_progress_error(doc)


@SETTINGS
@given(OFFSETS, OFFSETS, OFFSETS)
def test_any_offsets_are_partitions_or_a_progress_error(start, end, latest):
    source = {"description": "KafkaV2[Subscribe[t]]", "startOffset": start}
    batch_or_progress_error(
        progress_doc(sources=[{**source, "endOffset": end, "latestOffset": latest}])
    )


@SETTINGS
@given(st.lists(varied(TASK), min_size=1, max_size=3))
def test_any_observation_is_event_times_or_a_progress_error(tasks):
    batch_or_progress_error(progress_doc(observedMetrics=observation(tasks)))


@SETTINGS
@given(st.text(max_size=200) | DOCUMENTS.map(json.dumps))
def test_any_text_is_a_batch_or_a_progress_error(text):
    try:
        parse_progress_json(text)
    except ProgressError:
        pass
