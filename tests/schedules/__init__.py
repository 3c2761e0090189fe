"""Tests of the schedules package."""
