// Package hookhandlers publishes the lifecycle hook handlers each
// namespace's workloads declare, in the ConfigMap lifeline-hook-handlers
// of the manager's namespace: the parameters of the admission policy
// lifeline-hook-handlers.lifeline.dev (config/bridge/policy.yaml), which
// lets a hook operator's identity change on a pod only those labels and
// finalizers, and nothing in a namespace without hooks (the policy of
// Lifeline's identities, config/rbac/policy.yaml, keeps the rest of its
// writes to its hook.lifeline.dev/ annotations and conditions). RBAC
// cannot narrow a pod patch to some labels; the policy can, and the
// handlers are in the workloads' specs, which a policy cannot read.
package hookhandlers

import (
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// ConfigMapName is the published ConfigMap's, in the manager's namespace.
const ConfigMapName = "lifeline-hook-handlers"

// Entry prefixes: an entry is "label:<key>" or "finalizer:<name>", so the
// policy looks one up with a single `in`.
const (
	LabelPrefix     = "label:"
	FinalizerPrefix = "finalizer:"
)

// Source is a kind of workload with lifecycle hooks.
type Source struct {
	// Object is the kind's type, to watch; List lists it.
	Object client.Object
	List   client.ObjectList
	// Lifecycle reads an object's hooks (nil for none).
	Lifecycle func(client.Object) *pub.Lifecycle
}

// Data is the ConfigMap's data: for each namespace whose workloads declare
// a handler, its handlers, sorted, comma-separated (neither a label key
// nor a finalizer has a comma).
func Data(byNamespace map[string][]*pub.Lifecycle) map[string]string {
	out := map[string]string{}
	for ns, lifecycles := range byNamespace {
		entries := map[string]bool{}
		for _, l := range lifecycles {
			for _, h := range hooks(l) {
				for k := range h.LabelsHandler {
					entries[LabelPrefix+k] = true
				}
				for _, f := range h.FinalizersHandler {
					entries[FinalizerPrefix+f] = true
				}
			}
		}
		if len(entries) > 0 {
			out[ns] = strings.Join(slices.Sorted(maps.Keys(entries)), ",")
		}
	}
	return out
}

func hooks(l *pub.Lifecycle) []*pub.LifecycleHook {
	if l == nil {
		return nil
	}
	var out []*pub.LifecycleHook
	for _, h := range []*pub.LifecycleHook{l.PreDelete, l.InPlaceUpdate, l.PreNormal} {
		if h != nil {
			out = append(out, h)
		}
	}
	return out
}
