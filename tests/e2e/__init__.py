"""End-to-end tests: one Bees Cloud over HTTP and several computers (issue 6)."""
