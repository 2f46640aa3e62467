"""Sources that stay in sync: a folder (`folder.py`) or a web site (`crawl.py`) followed by a collection,
started as jobs by `service.py` (`SyncService`)."""
