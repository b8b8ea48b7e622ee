"""Benchmarks: kit against hand-written NumPy and PyTorch CPU, printed as ratios (see run.py)."""
