// Command devctl is Lifeline's developer tool. The Makefile calls it; its
// subcommands are:
//
//	devctl bin [-in-turn] NAME...
//	                      print the paths of pinned binaries, building those missing into the cache
//	                      (at once, or with -in-turn one after the other in the order given)
//	devctl envtest        print a KUBEBUILDER_ASSETS folder for envtest
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

	"github.com/lifeline-k8s/lifeline/hack/cluster"
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
		return fmt.Errorf("usage: devctl bin NAME | envtest | up | demo | registry | dashboard")
	}
	switch args[0] {
	case "bin":
		return bin(ctx, args[1:])
	case "envtest":
		dir, err := cluster.EnvtestAssets(ctx, os.Stderr)
		if err != nil {
			return err
		}
		fmt.Println(dir)
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
	return nil
}

// bin prints the paths of the named binaries, building the missing ones:
// at once (one go build per tools module), or with -in-turn each in the
// order given, so the first is ready as soon as can be (make test builds
// the tools its tests run in the order go test reaches those).
func bin(ctx context.Context, args []string) error {
	inTurn := len(args) > 0 && args[0] == "-in-turn"
	if inTurn {
		args = args[1:]
	}
	if len(args) == 0 {
		return fmt.Errorf("usage: devctl bin [-in-turn] NAME... (of %v)", cluster.BinaryNames())
	}
	batches := [][]string{args}
	if inTurn {
		batches = nil
		for _, name := range args {
			batches = append(batches, []string{name})
		}
	}
	for _, names := range batches {
		paths, err := cluster.BuildBinaries(ctx, names, os.Stderr)
		if err != nil {
			return err
		}
		for _, name := range names {
			fmt.Println(paths[name])
		}
	}
	return nil
}
