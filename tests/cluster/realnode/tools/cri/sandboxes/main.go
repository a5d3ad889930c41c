// Command cri-sandboxes lists or removes the pod sandboxes of a CRI runtime.
//
// The real test node's e2e test uses `list` to see that deleting a pod tore its
// sandbox down, and `down` uses `remove-all` so containerd's CRI plugin stops every
// pod properly (CNI DEL releases the IP and the veth) before containerd stops.
// crictl would do this, but sigs.k8s.io/cri-tools is not served by the module proxy.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type sandbox struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	State     string `json:"state"`
}

func main() {
	endpoint := flag.String("endpoint", "", "CRI socket, e.g. unix:///run/containerd/containerd.sock")
	timeout := flag.Duration("timeout", 60*time.Second, "deadline for the whole command")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s -endpoint unix:///path.sock list|remove-all\n", os.Args[0])
	}
	flag.Parse()
	if *endpoint == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	client := runtime.NewRuntimeServiceClient(conn)
	listed, err := client.ListPodSandbox(ctx, &runtime.ListPodSandboxRequest{})
	if err != nil {
		fail(err)
	}
	switch flag.Arg(0) {
	case "list":
		out := []sandbox{}
		for _, s := range listed.Items {
			out = append(out, sandbox{s.Id, s.Metadata.Name, s.Metadata.Namespace, s.Metadata.Uid, s.State.String()})
		}
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			fail(err)
		}
	case "remove-all":
		for _, s := range listed.Items {
			// Stop first: that is where the runtime runs CNI DEL and kills the containers.
			if _, err := client.StopPodSandbox(ctx, &runtime.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
				fail(fmt.Errorf("stop sandbox %s (%s/%s): %w", s.Id, s.Metadata.Namespace, s.Metadata.Name, err))
			}
			if _, err := client.RemovePodSandbox(ctx, &runtime.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
				fail(fmt.Errorf("remove sandbox %s: %w", s.Id, err))
			}
			fmt.Printf("removed sandbox %s (%s/%s)\n", s.Id, s.Metadata.Namespace, s.Metadata.Name)
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cri-sandboxes:", err)
	os.Exit(1)
}
