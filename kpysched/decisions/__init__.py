"""Decision records: what the scheduler saw and chose for each pod it tried, kept for
the last N attempts so `kpysched explain` can answer "why pending / why there" from the
very code path that decided (record.py: the shape; store.py: the bounded store)."""
