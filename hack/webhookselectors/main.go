// Command webhookselectors adds to the generated webhook configurations
// what controller-gen has no marker for: the namespaceSelector that keeps
// the pod mutating webhook off the system namespaces. make generate runs it
// after controller-gen, so verifygen checks its output too.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/lifeline-k8s/lifeline/internal/podadmission"
)

const manifests = "config/webhook/manifests.yaml"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "webhookselectors:", err)
		os.Exit(1)
	}
}

func run() error {
	data, err := os.ReadFile(manifests)
	if err != nil {
		return err
	}
	const anchor = "  name: mpod.lifeline.dev\n"
	text := string(data)
	if strings.Count(text, anchor) != 1 {
		return fmt.Errorf("%s: want exactly one webhook named mpod.lifeline.dev", manifests)
	}
	if strings.Contains(text, anchor+"  namespaceSelector:") {
		return nil // already there
	}
	selector := "  namespaceSelector:\n    matchExpressions:\n    - key: kubernetes.io/metadata.name\n      operator: NotIn\n      values:\n"
	for _, ns := range podadmission.SystemNamespaces {
		selector += "      - " + ns + "\n"
	}
	return os.WriteFile(manifests, []byte(strings.Replace(text, anchor, anchor+selector, 1)), 0o644)
}
