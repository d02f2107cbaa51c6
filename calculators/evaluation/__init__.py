"""Evaluation: the reader's own files, audited for leakage and compared between models."""
