"""The data stage: fetch, ingest by a declared mapping, normalize ratings, split, and check leakage."""
