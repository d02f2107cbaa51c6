"""Benchmarks: accuracy against published figures and speed (`make bench`)."""
