"""The store's tiers over time: the minute and hour rollups, day partitions, expiry."""
