// Command images builds Lifeline's container images without Docker or a
// registry (see cluster.BuildImages) and writes them as tarballs into
// bin/images: `make images`. go-containerregistry does the image work: a
// library, pinned in go.mod like any other, where ko or Docker would be
// one more tool to install and trust; the images need nothing but a Go
// binary, which is all this builds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

func main() {
	var o cluster.ImageOptions
	flag.StringVar(&o.Registry, "registry", "ghcr.io/lifeline-k8s", "Registry and path the image names start with.")
	flag.StringVar(&o.Tag, "tag", "", "Image tag; the revision's first 12 characters when empty.")
	flag.StringVar(&o.Arch, "arch", "", "Target architecture; this machine's when empty.")
	flag.StringVar(&o.Out, "out", "", "Folder for the tarballs; bin/images when empty.")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(o cluster.ImageOptions) error {
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	o.Root = root
	if o.Out == "" {
		o.Out = filepath.Join(root, "bin", "images")
	}
	paths, err := cluster.BuildImages(context.Background(), o)
	for _, p := range paths {
		fmt.Println(p)
	}
	return err
}
