// Package workloadref is the one definition, for every feature, of which
// workload a reference names and how many replicas a workload asks for.
package workloadref

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// Ref names a workload as a target or owner reference does.
type Ref struct{ APIVersion, Kind, Name string }

// Owner is the workload an owner reference names.
func Owner(o metav1.OwnerReference) Ref {
	return Ref{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name}
}

// Is reports whether r names the workload of kind gk called name: by API
// group, kind and name. The version does not matter: apps/v1 and
// apps/v1beta2 name one StatefulSet. An unparsable apiVersion names none.
func (r Ref) Is(gk schema.GroupKind, name string) bool {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	return err == nil && gv.Group == gk.Group && r.Kind == gk.Kind && r.Name == name
}

// Same reports whether a and b name the same workload (see Is).
func Same(a, b Ref) bool {
	gv, err := schema.ParseGroupVersion(b.APIVersion)
	return err == nil && a.Is(gv.WithKind(b.Kind).GroupKind(), b.Name)
}

// Replicas is a workload's replicas field with Kubernetes' default: unset
// means 1 for every workload (Deployment, StatefulSet, CloneSet).
func Replicas(replicas *int32) int32 { return ptr.Deref(replicas, 1) }
