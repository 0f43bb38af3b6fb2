// Command buildbin prints the paths of the pinned binaries the Makefile
// runs, building those missing into the cache (hack/binaries). It imports
// nothing heavy, so on a fresh machine it starts the control plane's build
// seconds after go run, while the repository's other dependencies still
// download and compile.
//
//	buildbin NAME...            build at once, one go build per tools module
//	buildbin -in-turn BATCH...  build one batch after the other, in the order given; a
//	                            batch is a name or several in one argument ("etcd kwok"),
//	                            built at once
//	buildbin -envtest           print a KUBEBUILDER_ASSETS folder for envtest
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

func main() {
	inTurn := flag.Bool("in-turn", false, "build each argument (one name, or several separated by spaces) after the one before, so the first is ready as soon as can be (make test builds the cluster's binaries, then the tools its tests run in the order go test reaches them)")
	envtest := flag.Bool("envtest", false, "print a folder holding etcd, kube-apiserver and kubectl, as envtest expects in KUBEBUILDER_ASSETS")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: buildbin [-in-turn] NAME... | buildbin -envtest\nnames: %v\n", binaries.BinaryNames())
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *inTurn, *envtest, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "buildbin:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, inTurn, envtest bool, names []string) error {
	if envtest {
		dir, err := binaries.EnvtestAssets(ctx, os.Stderr)
		if err == nil {
			fmt.Println(dir)
		}
		return err
	}
	if len(names) == 0 {
		flag.Usage()
		return fmt.Errorf("no binary named")
	}
	batches := [][]string{names}
	if inTurn {
		batches = nil
		for _, arg := range names {
			batches = append(batches, strings.Fields(arg))
		}
	}
	for _, batch := range batches {
		paths, err := binaries.BuildBinaries(ctx, batch, os.Stderr)
		if err != nil {
			return err
		}
		for _, name := range batch {
			fmt.Println(paths[name])
		}
	}
	return nil
}
