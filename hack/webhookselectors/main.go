// Command webhookselectors adds to the generated webhook configurations
// what controller-gen has no marker for: the namespaceSelector that keeps
// the pod webhooks off the system namespaces, and the matchConditions
// that send the validating ones only what could disrupt a pod. make
// generate runs it
// after controller-gen, so verifygen checks its output too.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/lifeline-k8s/lifeline/internal/manager"
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
	conditionsOf, err := manager.MatchConditions(manager.Features())
	if err != nil {
		return err
	}
	text := string(data)
	selector := "  namespaceSelector:\n    matchExpressions:\n    - key: kubernetes.io/metadata.name\n      operator: NotIn\n      values:\n"
	for _, ns := range podadmission.SystemNamespaces {
		selector += "      - " + ns + "\n"
	}
	for _, name := range []string{"mpod.lifeline.dev", "mpodcreate.lifeline.dev", "vpod.lifeline.dev", "vpodeviction.lifeline.dev", "vpodupdate.lifeline.dev"} {
		anchor := "  name: " + name + "\n"
		if strings.Count(text, anchor) != 1 {
			return fmt.Errorf("%s: want exactly one webhook named %s", manifests, name)
		}
		insert := ""
		if conditions := conditionsOf[name]; len(conditions) > 0 {
			insert = "  matchConditions:\n"
			for _, c := range conditions {
				insert += fmt.Sprintf("  - expression: %q\n    name: %s\n", c.Expression, c.Name)
			}
		}
		insert += selector
		if !strings.Contains(text, anchor+insert) {
			text = strings.Replace(text, anchor, anchor+insert, 1)
		}
	}
	return os.WriteFile(manifests, []byte(text), 0o644)
}
