// Package workload says which workload a pod belongs to, for budgets:
// a ReplicaSet's Deployment counts as the workload of the ReplicaSet's
// pods, as a user names it.
package workload

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/internal/workloadref"
	lifelineworkload "github.com/lifeline-k8s/lifeline/pkg/workload"
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

// ownsDirectly are the kinds known to own their pods (a Deployment through
// its ReplicaSets): a budget targeting one counts only the pods it owns,
// whatever else its selector matches.
var ownsDirectly = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "ReplicaSet"}: true,
	{Group: "apps", Kind: "StatefulSet"}: true, {Group: "apps", Kind: "DaemonSet"}: true,
	{Group: "batch", Kind: "Job"}: true,
}

// ownsPods reports whether kind gk is known to own its pods: a native one
// above, or a registered kind (pkg/workload) that does.
func ownsPods(gk schema.GroupKind) bool {
	if ownsDirectly[gk] {
		return true
	}
	k, ok := lifelineworkload.Lookup(gk)
	return ok && k.OwnsPods
}

// Members are the pods, among those its scale selector matches, that a
// budget targeting the workload (apiVersion, kind, name) counts: the pods
// whose workload it is (Top, as the admission matches them), so another
// workload's pods with matching labels never inflate its status. A
// custom kind that owns none of them directly (its pods belong to objects
// it makes) counts every pod its selector matches, as OpenKruise does.
func Members(ctx context.Context, c client.Reader, apiVersion, kind, name string, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	tops := map[types.UID]metav1.OwnerReference{}
	var out []*corev1.Pod
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			continue
		}
		top, ok := tops[ref.UID]
		if !ok {
			var err error
			if top, err = Top(ctx, c, pod.Namespace, *ref); err != nil {
				return nil, err
			}
			tops[ref.UID] = top
		}
		if workloadref.Same(workloadref.Ref{APIVersion: apiVersion, Kind: kind, Name: name}, workloadref.Owner(top)) {
			out = append(out, pod)
		}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if len(out) == 0 && err == nil && !ownsPods(gv.WithKind(kind).GroupKind()) {
		return pods, nil
	}
	return out, nil
}

// cached are the kinds whose metadata the manager's cache may read: it
// lists and watches them already. Others are read live, once.
var cached = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "ReplicaSet"}: true, {Group: "apps", Kind: "Deployment"}: true,
	{Group: "apps", Kind: "StatefulSet"}: true, {Group: "apps.kruise.io", Kind: "CloneSet"}: true,
}

// Gone reports whether the workload ref names (a pod's controller) is gone
// or being deleted: its pods are on their way out with it, and deleting
// them takes nothing from any budget (OpenKruise counts such a workload
// as expecting no pods). This is how the garbage collector's deletions
// pass, judged by the rules rather than by who sends them: whichever user
// kube-controller-manager runs as, and no user can borrow it. A workload
// the cache has not seen is read live before it is called gone; one that
// cannot be read (no permission) is not gone.
func Gone(ctx context.Context, cache, live client.Reader, namespace string, ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gv.WithKind(ref.Kind))
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	err = errNotRead
	if cached[obj.GroupVersionKind().GroupKind()] {
		err = cache.Get(ctx, key, obj)
	}
	if err != nil {
		err = live.Get(ctx, key, obj)
	}
	switch {
	case apierrors.IsNotFound(err):
		return true
	case err != nil:
		return false
	}
	return obj.DeletionTimestamp != nil || (ref.UID != "" && obj.UID != ref.UID)
}

var errNotRead = errors.New("not read from the cache")
