"""A posted body's events, each decoded on its own when one is nested too deeply."""

import pytest

from monitor.collect.documents import Undecodable, decode_events

DEEP = "[" * 3_000 + "]" * 3_000


def test_a_body_that_decodes_is_its_events():
    assert decode_events('[{"a": 1}, 2]') == [{"a": 1}, 2]
    assert decode_events('{"a": 1}') == [{"a": 1}]


def test_an_element_too_deep_is_undecodable_alone_and_strings_do_not_split():
    tricky = r'{"s": "a, b ] } [ { \" ,"}'
    events = decode_events(f"[ {tricky}, {DEEP} ,[1, [2]] ]")
    assert events[0] == {"s": 'a, b ] } [ { " ,'}
    assert events[1] == Undecodable(f" {DEEP} ", "the event is nested too deeply to decode as JSON")
    assert events[2] == [1, [2]]


def test_a_single_event_too_deep_is_undecodable():
    deep_object = '{"m": ' * 3_000 + "1" + "}" * 3_000
    [event] = decode_events(deep_object)
    assert isinstance(event, Undecodable) and event.text == deep_object


@pytest.mark.parametrize(
    "body", [f"[{DEEP}, 1", f"[{DEEP}] x", f"[{DEEP}]]"], ids=["open", "trailing", "extra"]
)
def test_a_body_that_is_not_json_is_refused_whole(body):
    with pytest.raises(ValueError):
        decode_events(body)
