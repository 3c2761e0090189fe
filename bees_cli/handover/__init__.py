"""Handing a run over: the checkpoint that travels with the run folder, and its verification."""
