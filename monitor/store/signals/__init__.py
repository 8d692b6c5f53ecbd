"""What tells readers and processes about the store: changes, notifications, leases."""
