"""What every request passes: the host names the server answers to (hosts), tokens for the
requests that change things (tokens), bounded parameters (params), the budget of new queries
(budget), and one answer per failure with the security headers (errors)."""
