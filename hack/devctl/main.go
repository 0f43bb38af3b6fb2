// Command devctl is Lifeline's developer tool. The Makefile calls it; its
// subcommands are:
//
//	devctl up             run the local cluster for make dev (see up.go)
//	devctl demo           walk make dev's seed scenario, showing the registry at each step (see demo.go)
//	devctl registry       show make dev's demo pods next to the service registry
//	devctl dashboard      run the demo under a Prometheus and evaluate the Grafana dashboard's queries (see dashboard.go)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	// devctl speaks through its own lines; controller-runtime's helpers it
	// uses (envtest's CRD installer) would otherwise complain of no logger.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "devctl:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: devctl up | demo | registry | dashboard (binaries: go run ./hack/buildbin)")
	}
	switch args[0] {
	case "up":
		return up(ctx, args[1:])
	case "demo":
		return demo(ctx, args[1:])
	case "registry":
		return registry(ctx, args[1:])
	case "dashboard":
		return dashboard(ctx, args[1:])
	default:
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
}
