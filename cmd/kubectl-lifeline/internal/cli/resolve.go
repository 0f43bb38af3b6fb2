package cli

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// target is a resource argument resolved: its kind and name.
type target struct {
	GroupKind schema.GroupKind
	Name      string
}

// resolve reads a resource argument as kubectl does: TYPE/NAME or TYPE
// NAME, TYPE a resource, its short name or its kind, with or without the
// group (clone/web, clonesets.apps.kruise.io/web, cloneset web). The API
// server's discovery decides what a type means, so short names follow the
// installed CRDs.
func (s *session) resolve(args []string) (target, error) {
	var typ, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		typ, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		typ, name = args[0], args[1]
	default:
		return target{}, fmt.Errorf("want one resource, as TYPE/NAME or TYPE NAME (for example clone/web), got %q", strings.Join(args, " "))
	}
	if typ == "" || name == "" {
		return target{}, fmt.Errorf("resource %q: TYPE and NAME must not be empty", strings.Join(args, " "))
	}
	gvr := schema.ParseGroupResource(typ).WithVersion("")
	gvk, err := s.mapper.KindFor(gvr)
	if err != nil {
		return target{}, fmt.Errorf("resource type %q: %w", typ, err)
	}
	return target{GroupKind: gvk.GroupKind(), Name: name}, nil
}

// workloadKind is the plugin's kind of a resolved target, or an error
// saying which kinds the command takes.
func workloadKind(t target) (workload.Kind, error) {
	if k, ok := workload.Lookup(t.GroupKind); ok {
		return k, nil
	}
	hint := ""
	if t.GroupKind.Group == "apps" && (t.GroupKind.Kind == "StatefulSet" || t.GroupKind.Kind == "DaemonSet") {
		hint = fmt.Sprintf(" (that is the native %s; use asts/NAME or ads/NAME for Lifeline's)", t.GroupKind.Kind)
	}
	var known []string
	for _, k := range workload.Kinds() {
		known = append(known, fmt.Sprintf("%s (%s)", k.Name, k.Short))
	}
	return workload.Kind{}, fmt.Errorf("%s/%s: want one of %s%s", t.GroupKind.String(), t.Name, strings.Join(known, ", "), hint)
}

// want checks that t is of kind gk.
func want(t target, gk schema.GroupKind, short string) error {
	if t.GroupKind != gk {
		return fmt.Errorf("%s/%s: want a %s (%s/NAME)", t.GroupKind.String(), t.Name, gk.Kind, short)
	}
	return nil
}
