"""The one write path: a group of events in one transaction, and what it derives."""
