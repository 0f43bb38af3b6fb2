// Package protection decides which namespaces Lifeline's fail-closed pod
// webhooks guard. A webhook that fails closed refuses what it cannot judge:
// with every replica down, a budget or a held hook stays in force. Sent
// for every pod in the cluster, as OpenKruise's are, it would also stop
// every Deployment's scale-down and every StatefulSet's pod creation in
// namespaces that asked for nothing. So each fail-closed webhook selects
// only the namespaces labelled for its kind of protection, and a twin
// that fails open serves the others: while Lifeline runs, every namespace
// is judged alike; while it is down, only the protected ones wait.
//
// A namespace is labelled while it holds an object that asks for that
// protection (a PodUnavailableBudget, a CloneSet guarding its hooks, a
// PersistentPodState), and unlabelled when the last one goes. The
// manager's own namespace and the system namespaces are never labelled:
// with no replica serving, nothing there may wait on Lifeline, or the way
// to repair it (deleting its pods, rolling it) would be shut.
package protection

import (
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is a kind of protection: each has its namespace label and its
// fail-closed webhooks.
type Kind string

const (
	// Disruptions: deletes, evictions and in-place updates of pods are
	// judged (budgets, the hook guard).
	Disruptions Kind = "disruptions"
	// Placement: new ordinal pods are placed where their record says
	// (PersistentPodState).
	Placement Kind = "placement"
)

// LabelPrefix begins every protection label.
const LabelPrefix = "protection.lifeline.dev/"

// Label is the namespace label that turns the kind's webhooks to fail
// closed there, with the value "true".
func (k Kind) Label() string { return LabelPrefix + string(k) }

// Source is a type of object that asks for protection in its namespace.
type Source struct {
	Kind Kind
	// Object is an empty object of the type, for the watch; List an
	// empty list of it.
	Object client.Object
	List   client.ObjectList
	// Holds says whether one object asks for protection; nil means
	// every object does.
	Holds func(client.Object) bool
}

// holds reports whether obj, of this source's type, asks for protection.
func (s Source) holds(obj client.Object) bool {
	return obj.GetDeletionTimestamp() == nil && (s.Holds == nil || s.Holds(obj))
}

// Holder names an object that asks for a kind of protection.
type Holder struct {
	Kind Kind
	// Name is "Kind/name" of the object.
	Name string
}

// Change is one label the plan sets or removes, and why.
type Change struct {
	Kind Kind
	// On: the label is set; otherwise removed.
	On bool
	// By is the first object that asks for it (when On).
	By string
}

// Plan returns the label changes that bring a namespace's labels in line
// with what its objects ask for: each needed kind labelled "true", each
// label of a kind no longer needed (or never allowed, exempt) removed.
// Labels under LabelPrefix that name no known kind are left alone: they
// are not ours to judge.
func Plan(labels map[string]string, holders []Holder, exempt bool, kinds []Kind) []Change {
	by := map[Kind]string{}
	if !exempt {
		for _, h := range holders {
			if _, ok := by[h.Kind]; !ok {
				by[h.Kind] = h.Name
			}
		}
	}
	var changes []Change
	for _, k := range kinds {
		name, want := by[k]
		have := labels[k.Label()] == "true"
		_, present := labels[k.Label()]
		switch {
		case want && !have:
			changes = append(changes, Change{Kind: k, On: true, By: name})
		case !want && present:
			changes = append(changes, Change{Kind: k})
		}
	}
	return changes
}

// Kinds are the distinct kinds of sources, in a stable order.
func Kinds(sources []Source) []Kind {
	set := map[Kind]bool{}
	for _, s := range sources {
		set[s.Kind] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// Protected reports whether a namespace's labels turn kind k's webhooks
// to fail closed there.
func Protected(labels map[string]string, k Kind) bool {
	return labels[k.Label()] == "true"
}

// State is how a kind of protection stands in a namespace, for the
// conditions of the objects that ask for it.
type State struct {
	InForce         bool
	Reason, Message string
}

// StateOf says whether kind k's webhooks fail closed in a namespace with
// these labels. unserved are the namespaces the pod webhooks leave out
// altogether; manager is the manager's own namespace.
func StateOf(namespace string, labels map[string]string, k Kind, unserved []string, manager string) State {
	switch {
	case slices.Contains(unserved, namespace):
		return State{Reason: "NamespaceNotServed",
			Message: "Lifeline's pod webhooks leave namespace " + namespace + " out: nothing there is judged"}
	case namespace == manager:
		return State{Reason: "ManagerNamespace",
			Message: "namespace " + namespace + " is Lifeline's own: its pods are judged while Lifeline's webhooks answer and let through when they cannot, so that Lifeline can always be repaired"}
	case !Protected(labels, k):
		return State{Reason: "NamespaceNotLabelled",
			Message: "namespace " + namespace + " does not carry " + k.Label() + "=true yet: its pods are judged while Lifeline's webhooks answer, and let through when they cannot"}
	}
	return State{InForce: true, Reason: "WebhooksServeNamespace",
		Message: "Lifeline's pod webhooks judge this namespace's pods, and refuse what they cannot judge"}
}

// Twin is the name of the fail-open twin of a fail-closed webhook:
// "-open" after its first label (vpod.lifeline.dev: vpod-open.lifeline.dev).
func Twin(webhook string) string {
	first, rest, _ := strings.Cut(webhook, ".")
	return first + "-open." + rest
}
