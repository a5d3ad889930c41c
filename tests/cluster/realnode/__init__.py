"""One real node for the test cluster: kubelet + containerd + runc + CNI, built from Go modules."""
