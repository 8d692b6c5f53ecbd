"""The packed formats: a batch's partitions, and a span's rollups, in a row each."""
