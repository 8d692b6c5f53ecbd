"""The HTTP API: queries, partitions, batches and history (queries), alerts and silences
(alerts), the watermark's diagnosis (diagnosis), the one route that writes events (ingest), the
scrape for Prometheus (metrics), and the payloads the API and the live push share (payloads)."""
