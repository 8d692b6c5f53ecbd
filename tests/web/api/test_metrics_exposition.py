"""The /metrics writer against prometheus_client's own, byte for byte."""

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from web.api.metrics.exposition import COUNTER, GAUGE, Family, exposition


def test_the_exposition_is_prometheus_client_s_byte_for_byte():
    """Our writer against prometheus_client's over the same families: label values with
    quotes, backslashes, line breaks and any Unicode, counters, values of every kind."""
    names = ['orders "eu"', "back\\slash", "two\nlines", "überwachung ✓", ""]
    values = [0.0, 1.0, -2.5, 1e21, 123456789.0, 1.5e-7, float("inf"), float("-inf")]
    labels = ("query", "partition", "a_label")
    ours, theirs = [], []
    for kind, make in ((GAUGE, GaugeMetricFamily), (COUNTER, CounterMetricFamily)):
        family = Family(f"wmon_test_{kind}", 'help with "\\" and\nbreak', kind, labels)
        their = make(f"wmon_test_{kind}", 'help with "\\" and\nbreak', labels=labels)
        for n, name in enumerate(names):
            sample = (name, f"t/{n}", names[-1 - n])
            family.samples.append((sample, values[n]))
            their.add_metric(sample, values[n])
        ours.append(family)
        theirs.append(their)
    bare = Family("wmon_test_bare", "no labels", GAUGE, ())
    their_bare = GaugeMetricFamily("wmon_test_bare", "no labels", labels=[])
    for value in values[5:]:
        bare.samples.append(((), value))
        their_bare.add_metric([], value)
    ours.append(bare)
    theirs.append(their_bare)

    class Theirs:
        def collect(self):
            return iter(theirs)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Theirs())
    assert exposition(ours) == generate_latest(registry)
