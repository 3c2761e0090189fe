"""Agent work without Temporal: agent choice, eligibility, item snapshots and the command runner."""
