"""The `wmon` command: the one place that wires the library, the dashboard and the streaming jobs
together. One module per command group; each imports its heavy dependencies itself."""
