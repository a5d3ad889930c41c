"""The scheduler's view of the cluster: what is placed where, assumed pods included.

- `cache.py`: Cache, nodes and the pods on them as the informers report them plus the
  pods assumed by the scheduling cycle (upstream's internal cache); `snapshot.py`:
  the per-cycle Snapshot updated from it incrementally, with numpy columns
  (`node_rows.py`) the vector Filters read; `node_info.py`: NodeInfo, one node's
  pods and requested resources; `node_tree.py`: the zone-interleaved node order;
  `label_index.py`: label values by node; `pod_groups.py`: pod groups' members and
  their states; `dump.py`: the debug endpoint's dump.

May import: kpysched.objects only (and numpy): the framework, the queue, plugins and
the scheduling core read these types.
"""
