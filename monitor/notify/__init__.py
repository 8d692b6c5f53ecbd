"""Notifying: the outbox of deliveries, their sending with retries, the receivers' kinds."""
