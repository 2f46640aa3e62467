"""Real single-node Elasticsearch for tests: see node.py and README.md."""
