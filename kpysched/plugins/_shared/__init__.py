"""Helpers several in-tree plugins share (upstream's plugins/helper and the validation
in apis/config/validation): args validation (`args`), Go's integer arithmetic and score
normalisation (`go_math`), the piecewise-linear utilization shape (`shape_score`),
per-row counts kept across cycles (`row_counts`) and the volume plugins' lister lookups
(`volume_helpers`).

A helper lives here only when plugins of more than one room use it; one plugin's helper
stays in that plugin's room. May import objects/, cache/ and framework/; never a plugin.
"""
