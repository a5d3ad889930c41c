"""What would make a pending pod fit: single changes to the pod or the cluster, each
checked by running the scheduler's own code over a snapshot of the cluster (the
simulator, kpysched.simulate), never guessed.

- fixes.py: the candidate changes, read from the pod, the cluster and the attempt's
  rejections (which plugin turned each node away, and why);
- trial.py: runs the pod as it is and each candidate in a simulation and counts the
  nodes that would take it;
- report.py: the checked fixes as JSON and as text.

May import kpysched.simulate and what it builds on; used by the explain command.
Reads only the snapshot it is given: nothing here talks to a cluster.
"""
