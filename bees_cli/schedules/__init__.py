"""Schedules: when they fire, in wall-clock time and in UTC, and the keys of their fires."""
