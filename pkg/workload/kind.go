// Package workload describes each kind of workload whose pods carry
// Lifeline's lifecycle hooks: one Kind per kind, registered once, that
// the manager (hook guard, budgets, hook handlers), the hook SDK, the
// bridge and the kubectl plugin all read. The three kinds of
// apps.kruise.io are registered here; another kind (a custom workload
// with a scale subresource and a pod template) is one Register call.
package workload

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is one kind of workload.
type Kind struct {
	// Group and Name are the API group and kind: apps.kruise.io, CloneSet.
	Group, Name string
	// Resource is its plural resource name; Short the name the plugin
	// takes in resource arguments (clone/NAME).
	Resource, Short string
	// Version is the version read and stored (OpenKruise v1.9 stores
	// v1beta1); Served are all the versions the API serves. A pod's
	// controller reference may name any of them.
	Version string
	Served  []string
	// Scale is whether the kind has the scale subresource; without it
	// (a DaemonSet) a budget expects the pods Read's Replicas says.
	Scale bool
	// PausedPath is where the rollout's pause flag lives in the object.
	PausedPath []string
	// OwnsPods is true when the workload is its pods' controller (not an
	// object it makes): a budget targeting it counts only the pods it
	// owns.
	OwnsPods bool
	// New and NewList are empty objects of the kind in Version, to read
	// into; Read views an object read into New's result (once registered,
	// with its Kind set).
	New     func() client.Object
	NewList func() client.ObjectList
	Read    func(client.Object) View

	// goType is New's Go type, nil when it is unstructured: Of matches
	// objects by it without making one.
	goType reflect.Type
}

// View is obj, read into New's result, as every part reads a workload.
func (k Kind) View(obj client.Object) View {
	v := k.Read(obj)
	if v.Kind.Name == "" {
		v.Kind = k
	}
	return v
}

// List lists the kind's workloads with c and views each.
func (k Kind) List(ctx context.Context, c client.Reader, opts ...client.ListOption) ([]View, error) {
	list := k.NewList()
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	views := make([]View, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			views = append(views, k.View(obj))
		}
	}
	return views, nil
}

// GroupKind is the kind's group and kind.
func (k Kind) GroupKind() schema.GroupKind { return schema.GroupKind{Group: k.Group, Kind: k.Name} }

// GroupVersionKind is the kind in the version read.
func (k Kind) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Name}
}

// String is Kind.Group, as kubectl names a kind: CloneSet.apps.kruise.io.
func (k Kind) String() string { return k.Name + "." + k.Group }

var registry struct {
	sync.RWMutex
	kinds []Kind
}

// Register adds a kind, once: every part of Lifeline that deals with
// workloads then deals with it. It refuses a kind already registered or
// one without its readers, and returns the kind as registered, whose Read
// sets the view's Kind.
func Register(k Kind) (Kind, error) {
	if k.Group == "" || k.Name == "" || k.Version == "" || k.New == nil || k.NewList == nil || k.Read == nil {
		return Kind{}, fmt.Errorf("workload kind %s: group, name, version, New, NewList and Read are required", k)
	}
	read := k.Read
	k.Read = func(o client.Object) View {
		v := read(o)
		v.Kind = k
		return v
	}
	if !slices.Contains(k.Served, k.Version) {
		k.Served = append(slices.Clone(k.Served), k.Version)
	}
	if _, unstructured := k.New().(*unstructured.Unstructured); !unstructured {
		k.goType = reflect.TypeOf(k.New())
	}
	registry.Lock()
	defer registry.Unlock()
	for _, have := range registry.kinds {
		if have.GroupKind() == k.GroupKind() {
			return Kind{}, fmt.Errorf("workload kind %s is registered already", k)
		}
	}
	registry.kinds = append(registry.kinds, k)
	return k, nil
}

// Unregister removes a kind registered by a test.
func Unregister(gk schema.GroupKind) {
	registry.Lock()
	defer registry.Unlock()
	registry.kinds = slices.DeleteFunc(registry.kinds, func(k Kind) bool { return k.GroupKind() == gk })
}

// Kinds are the registered kinds, in registration order (the three of
// apps.kruise.io first).
func Kinds() []Kind {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.kinds)
}

// Lookup finds a kind by group and kind.
func Lookup(gk schema.GroupKind) (Kind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	for _, k := range registry.kinds {
		if k.GroupKind() == gk {
			return k, true
		}
	}
	return Kind{}, false
}

// ForOwner finds the kind an owner reference names, in any served
// version: pods OpenKruise made name apps.kruise.io/v1alpha1 or v1beta1.
func ForOwner(ref *metav1.OwnerReference) (Kind, bool) {
	if ref == nil {
		return Kind{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return Kind{}, false
	}
	k, ok := Lookup(gv.WithKind(ref.Kind).GroupKind())
	if !ok || !slices.Contains(k.Served, gv.Version) {
		return Kind{}, false
	}
	return k, true
}

// Of finds the kind of obj: by its Go type, or for an unstructured object
// by its group and kind.
func Of(obj client.Object) (Kind, bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return Lookup(u.GroupVersionKind().GroupKind())
	}
	t := reflect.TypeOf(obj)
	registry.RLock()
	defer registry.RUnlock()
	for _, k := range registry.kinds {
		if k.goType == t {
			return k, true
		}
	}
	return Kind{}, false
}

// ReadObject views obj, of a registered kind.
func ReadObject(obj client.Object) (View, bool) {
	k, ok := Of(obj)
	if !ok {
		return View{}, false
	}
	return k.View(obj), true
}
