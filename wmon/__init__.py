"""The `wmon` command: the one place that wires the library, the dashboard and the streaming jobs
together. wmon.commands reads every command's arguments with light imports; one module per
command group runs them, imported only when its command runs."""
