"""Alerting: rules over the stored state, an alert lifecycle."""
