"""`kpysched explain NAMESPACE/POD`: the live leader's decision records for one pod,
fetched with the user's own credentials (client.py) and shown as tables (render.py)."""
