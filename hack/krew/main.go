// Command krew is make krew: it builds kubectl-lifeline's release archives
// (a tar.gz of the binary per platform) and renders .krew.yaml against
// them, as krew-release-bot does at a release, into one folder:
//
//	go run ./hack/krew -tag v0.1.0 -out bin/krew
//
// `kubectl krew install --manifest=bin/krew/lifeline.yaml
// --archive=bin/krew/kubectl-lifeline_linux_amd64.tar.gz` then installs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

func main() {
	tag := flag.String("tag", "v0.0.0-dev", "the release tag the manifest names")
	out := flag.String("out", "bin/krew", "folder for the archives and lifeline.yaml")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64", "os/arch pairs to build")
	flag.Parse()
	root, err := binaries.RepoRoot()
	if err == nil {
		var manifest string
		manifest, err = Release(context.Background(), root, *tag, *out, strings.Split(*platforms, ","))
		if err == nil {
			fmt.Println("wrote", manifest)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}
