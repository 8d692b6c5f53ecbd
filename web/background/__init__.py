"""The dashboard's periodic background work: the alert evaluator (evaluation) and the pruner
of history (retention), periodic tasks (tasks); web.start and web.stop own them."""
