package controller

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/workload"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
	lifelineworkload "github.com/lifeline-k8s/lifeline/pkg/workload"
)

// podsOf returns the budget's active pods and how many it expects: the
// target's scale (replicas and selector read through its scale
// subresource), or, for a selector, the scales of the distinct workloads
// controlling the selected pods; pub.kruise.io/protect-total-replicas
// overrides the count either way.
func (r *Reconciler) podsOf(ctx context.Context, pub *policyv1alpha1.PodUnavailableBudget) ([]*corev1.Pod, int32, error) {
	var selector labels.Selector
	var expected int32
	if t := pub.Spec.TargetReference; t != nil {
		gv, err := schema.ParseGroupVersion(t.APIVersion)
		if err != nil {
			return nil, 0, err
		}
		s, err := r.scaleOf(ctx, gv.WithKind(t.Kind).GroupKind(), pub.Namespace, t.Name)
		if err != nil || s == nil {
			return nil, 0, err
		}
		if selector, err = labels.Parse(s.Status.Selector); err != nil {
			return nil, 0, fmt.Errorf("the scale selector of %s %s: %w", t.Kind, t.Name, err)
		}
		expected = s.Spec.Replicas
	} else if pub.Spec.Selector != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(pub.Spec.Selector); err != nil {
			return nil, 0, err
		}
	}
	if selector == nil || selector.Empty() {
		return nil, 0, nil
	}
	list := &corev1.PodList{}
	// The pods are only read: a budget over 10,000 pods must not copy
	// them all on every recomputation.
	if err := r.List(ctx, list, client.InNamespace(pub.Namespace), client.MatchingLabelsSelector{Selector: selector}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, err
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if podfacts.IsActive(p) {
			pods = append(pods, p)
		}
	}
	var err error
	if t := pub.Spec.TargetReference; t != nil {
		if pods, err = workload.Members(ctx, r.Client, t.APIVersion, t.Kind, t.Name, pods); err != nil {
			return nil, 0, err
		}
	} else if expected, err = r.expectedFor(ctx, pub.Namespace, selector, pods); err != nil {
		return nil, 0, err
	}
	if v, ok := pub.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			expected = int32(n)
		}
	}
	return pods, expected, nil
}

// expectedFor sums the replicas of the distinct workloads controlling the
// pods (a ReplicaSet of a Deployment counts as its Deployment), and of the
// Deployments, StatefulSets and workloads of registered kinds with a scale
// subresource (CloneSets, Advanced StatefulSets) whose pod template the
// selector matches. Pods without a workload count nothing: protect-total-replicas
// covers them.
//
// The templates count because the pods alone miss a workload that has no
// active pod at the moment: a Deployment rolled with maxUnavailable 100%
// has none between its old pods' deletion and its new pods' creation. A
// budget over two such Deployments then expected one Deployment's
// replicas and, for that moment, admitted deletions down to that one's
// desired count (3 of 10 pods available where 7 were promised). OpenKruise
// counts from the pods alone, and has the same hole.
func (r *Reconciler) expectedFor(ctx context.Context, namespace string, selector labels.Selector, pods []*corev1.Pod) (int32, error) {
	tops, err := r.templateWorkloads(ctx, namespace, selector)
	if err != nil {
		return 0, err
	}
	owners := map[types.UID]bool{}
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil || owners[ref.UID] {
			continue
		}
		owners[ref.UID] = true
		top, err := workload.Top(ctx, r.Client, namespace, *ref)
		if err != nil {
			return 0, err
		}
		if _, ok := tops[top.UID]; !ok {
			tops[top.UID] = top
		}
	}
	var total int32
	for _, top := range tops {
		gv, err := schema.ParseGroupVersion(top.APIVersion)
		if err != nil {
			return 0, err
		}
		s, err := r.scaleOf(ctx, gv.WithKind(top.Kind).GroupKind(), namespace, top.Name)
		if err != nil {
			return 0, err
		}
		if s != nil {
			total += s.Spec.Replicas
		}
	}
	return total, nil
}

// templateWorkloads are the Deployments, StatefulSets and the workloads of
// registered kinds with a scale subresource of the namespace, not being deleted, whose pod template labels the selector
// matches, by UID.
func (r *Reconciler) templateWorkloads(ctx context.Context, namespace string, selector labels.Selector) (map[types.UID]metav1.OwnerReference, error) {
	tops := map[types.UID]metav1.OwnerReference{}
	add := func(obj client.Object, template map[string]string, kind schema.GroupVersionKind) {
		if obj.GetDeletionTimestamp() == nil && selector.Matches(labels.Set(template)) {
			tops[obj.GetUID()] = metav1.OwnerReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: obj.GetName(), UID: obj.GetUID()}
		}
	}
	deployments := &appsv1.DeploymentList{}
	if err := r.List(ctx, deployments, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range deployments.Items {
		add(&deployments.Items[i], deployments.Items[i].Spec.Template.Labels, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	}
	statefulSets := &appsv1.StatefulSetList{}
	if err := r.List(ctx, statefulSets, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range statefulSets.Items {
		add(&statefulSets.Items[i], statefulSets.Items[i].Spec.Template.Labels, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	}
	// Every registered kind with a scale subresource (a CloneSet, an
	// Advanced StatefulSet), as the native StatefulSet.
	for _, k := range lifelineworkload.Kinds() {
		if !k.Scale {
			continue
		}
		views, err := k.List(ctx, r.Client, client.InNamespace(namespace), client.UnsafeDisableDeepCopy)
		if err != nil {
			return nil, err
		}
		for _, v := range views {
			if v.Template != nil {
				add(v.Object, v.Template.Labels, k.GroupVersionKind())
			}
		}
	}
	return tops, nil
}

// exactGroup is the RESTMapper the scale client resolves resources with:
// it answers ResourceFor with a resource of the very group asked for. The
// manager's mapper answers a group-qualified resource with those of every
// group whose name begins with it too, apps.kruise.io's first: the scale of the
// StatefulSet "db" (apps) was read from the Advanced StatefulSet "db"
// (apps.kruise.io), found missing, and its budget expected no pod. The
// PodUnavailableBudget e2e matrix fails without it.
type exactGroup struct{ meta.RESTMapper }

func (m exactGroup) ResourceFor(in schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	all, err := m.RESTMapper.ResourcesFor(in)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, r := range all {
		if r.Group == in.Group && (in.Version == "" || r.Version == in.Version) {
			return r, nil
		}
	}
	return schema.GroupVersionResource{}, &meta.NoResourceMatchError{PartialResource: in}
}

// scaleOf reads a workload's scale subresource; nil when the workload is
// gone or has none.
func (r *Reconciler) scaleOf(ctx context.Context, gk schema.GroupKind, namespace, name string) (*autoscalingv1.Scale, error) {
	if s, ok, err := r.daemonScale(ctx, gk, types.NamespacedName{Namespace: namespace, Name: name}); ok {
		return s, err
	}
	mapping, err := r.Mapper.RESTMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gk, err)
	}
	s, err := r.Scales.Scales(namespace).Get(ctx, mapping.Resource.GroupResource(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return s, err
}

// daemonScale stands in for the scale subresource a DaemonSet (native, or
// a registered kind without one: the Advanced DaemonSet) does not have: it expects a pod on each node that should run
// one, status.desiredNumberScheduled, selected by its selector. OpenKruise
// finds no scale there and leaves such a budget expecting nothing, so it
// protects no pod. ok is false for other kinds.
func (r *Reconciler) daemonScale(ctx context.Context, gk schema.GroupKind, key types.NamespacedName) (s *autoscalingv1.Scale, ok bool, err error) {
	var desired int32
	var selector *metav1.LabelSelector
	k, registered := lifelineworkload.Lookup(gk)
	switch {
	case gk == schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		ds := &appsv1.DaemonSet{}
		if err := r.Get(ctx, key, ds); err != nil {
			return nil, true, client.IgnoreNotFound(err)
		}
		desired, selector = ds.Status.DesiredNumberScheduled, ds.Spec.Selector
	case registered && !k.Scale:
		obj := k.New()
		if err := r.Get(ctx, key, obj); err != nil {
			return nil, true, client.IgnoreNotFound(err)
		}
		v := k.View(obj)
		desired, selector = v.Replicas, v.Selector
	default:
		return nil, false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, true, err
	}
	s = &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: desired}, Status: autoscalingv1.ScaleStatus{Replicas: desired, Selector: sel.String()}}
	return s, true, nil
}
