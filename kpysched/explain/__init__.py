"""`kpysched explain NAMESPACE/POD`: the live leader's decision records for one pod,
fetched with the user's own credentials (client.py) and shown as tables (render.py);
cli.py is its command line (kpysched.cli runs it, also as `kubectl kpysched`).

May import: decisions/ (the records' API path and shape), objects/ and the API
client to ask the scheduler. Never kpysched.cli (which imports this package) or
anything that schedules."""
