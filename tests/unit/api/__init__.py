"""Tests of kpysched/api/: the raw-JSON client, the HTTP/1.1 pool, the lean
kubernetes_asyncio load, the timestamp formats."""
