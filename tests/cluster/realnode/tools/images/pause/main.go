// Command pause is the sandbox process of every pod on the real test node: it
// holds the pod's namespaces open and does nothing else. No registry is reachable
// from the harness, so the sandbox image is built from this file.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		// As PID 1 of a pod that shares its process namespace, pause inherits
		// orphans; reap them so they do not linger as zombies.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
