"""Decision records: what the scheduler saw and chose for each pod it tried, kept for
the last N attempts so `kpysched explain` can answer "why pending / why there" from the
very code path that decided (record.py: the shape; store.py: the bounded store;
endpoint.py and api.py: how they are served).

May import: nothing else of kpysched: the framework and the scheduling core fill the
records, and record.py reads their results through protocols rather than their types.
"""
