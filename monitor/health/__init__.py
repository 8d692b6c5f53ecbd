"""Health: what idle, stalled, rewound, skewed and late mean, as pure predicates over facts, and
a query's status derived from them. Used alike by the store's health flags, the dashboard and
the alert rules."""
