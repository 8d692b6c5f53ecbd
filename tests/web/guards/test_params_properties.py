"""Whatever a query string holds, the API answers 200, 400 or 404, and the parameter readers
return values within their bounds or raise BadParameter; nothing else escapes."""

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from monitor.store.write.writes import write_event
from tests.support.progress import batch_event
from web.guards.params import MAX_EPOCH_MS, BadParameter, bounded, epoch_ms, time_range

NOW = 1_700_000_000_000
PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
# Texts that look like what people and scripts send, and the odd ones in between.
VALUES = st.one_of(
    st.text(max_size=24),
    st.integers(-(2**70), 2**70).map(str),
    st.datetimes().map(lambda moment: moment.isoformat()),
    st.sampled_from(["inf", "nan", "1e3", "1_000", " 5", "\u0661\u0662", "Z", "2024-02-30"]),
    st.sampled_from(["99999999999999999999", str(2**63), str(-(2**63) - 1), "9" * 5_000]),
)
PARAMETERS = st.dictionaries(
    st.sampled_from(["from", "to", "points", "limit", "offset", "state", "query", "q", "status"]),
    VALUES,
    max_size=4,
)


@PROPERTY
@given(text=VALUES)
def test_epoch_ms_is_within_bounds_or_a_bad_parameter(text):
    try:
        value = epoch_ms("to", text)
    except BadParameter as error:
        assert str(error).startswith("to must be ")
    else:
        assert 0 <= value <= MAX_EPOCH_MS


@PROPERTY
@given(args=PARAMETERS)
def test_ranges_and_counts_are_within_bounds_or_a_bad_parameter(args):
    try:
        from_ms, to_ms = time_range(args, NOW)
        points = bounded(args, "points", 500, 1, 2_000)
    except BadParameter as error:
        assert str(error).split(" ", 1)[0] in ("from", "to", "points")
    else:
        assert 0 <= from_ms < to_ms <= MAX_EPOCH_MS and 1 <= points <= 2_000


@PROPERTY
@given(args=PARAMETERS, path=st.sampled_from(["/batches", "/partitions/history", "/timers", ""]))
@example(args={"to": "99999999999999999999"}, path="/batches")
@example(args={"limit": str(2**63)}, path="/timers")
def test_the_api_answers_any_query_string_with_200_400_or_404(client, engine, args, path):
    write_event(engine, batch_event("q0", 0, NOW - 1_000, name="orders"))
    for url in (f"/api/queries/q0{path}", "/api/alerts", "/api/queries"):
        response = client.get(url, query_string=args)
        assert response.status_code in (200, 400, 404), (url, args, response.status_code)
        assert response.is_json
