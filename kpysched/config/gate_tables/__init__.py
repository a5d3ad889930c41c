"""The feature gates each kube-scheduler release kpysched can behave as accepts, with
their defaults: data only (v1_36, v1_37), read by config.features and config.flags.

May import: nothing of kpysched."""
