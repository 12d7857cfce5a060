"""Benchmarks: they print figures and write bench/results.json; they assert nothing.

``make bench`` runs each module (the Makefile's ``BENCHES``). Each owns one top-level section of
results.json ("engine", "runtime" …) and merges it in, leaving the other sections alone;
"machine" and "timestamp" describe the latest run. ``BENCH_SHORT=1`` (``make bench-smoke``) runs
them at tiny sizes and writes nothing (bench/results.py); the servers they start are
tests/live_server.py's.
"""
