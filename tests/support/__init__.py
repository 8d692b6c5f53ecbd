"""Shared test support: event and store builders, scenarios, servers and processes."""
