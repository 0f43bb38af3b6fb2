// Package workload says which workload a pod belongs to, for budgets:
// a ReplicaSet's Deployment counts as the workload of the ReplicaSet's
// pods, as a user names it.
package workload

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch

// Top follows a controller reference from a ReplicaSet up to the
// Deployment controlling it; any other reference is its own top.
func Top(ctx context.Context, c client.Reader, namespace string, ref metav1.OwnerReference) (metav1.OwnerReference, error) {
	if ref.Kind != "ReplicaSet" {
		return ref, nil
	}
	rs := &metav1.PartialObjectMetadata{}
	rs.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"})
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, rs); err != nil {
		return ref, client.IgnoreNotFound(err)
	}
	if up := metav1.GetControllerOf(rs); up != nil && up.Kind == "Deployment" {
		return *up, nil
	}
	return ref, nil
}

// Same reports whether ref names the workload group, kind and name name
// (the version does not matter).
func Same(apiVersion, kind, name string, ref metav1.OwnerReference) bool {
	a, errA := schema.ParseGroupVersion(apiVersion)
	b, errB := schema.ParseGroupVersion(ref.APIVersion)
	return errA == nil && errB == nil && a.Group == b.Group && kind == ref.Kind && name == ref.Name
}
