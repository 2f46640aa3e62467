"""Retrieval evaluation (`carrag eval`) and performance benchmarks (`carrag bench`)."""
