"""Benchmarks: they print figures and write bench/results.json; they assert nothing.

``make bench`` runs ``python -m bench.engine``. Each benchmark module owns one top-level
section of results.json ("engine", later "runtime") and merges it in, leaving the other
sections alone; "machine" and "timestamp" describe the latest run.
"""
