package hook

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// Kind is a kind of workload, in apps.kruise.io, whose pods carry
// lifecycle hooks.
type Kind string

const (
	// KindCloneSet is apps.kruise.io CloneSet.
	KindCloneSet Kind = "CloneSet"
	// KindStatefulSet is apps.kruise.io StatefulSet, the Advanced
	// StatefulSet (not apps/v1's, which has no lifecycle hooks).
	KindStatefulSet Kind = "StatefulSet"
	// KindDaemonSet is apps.kruise.io DaemonSet, the Advanced DaemonSet.
	// Its pods have the preDelete hook only, so an operator's other
	// handlers never fire for them.
	KindDaemonSet Kind = "DaemonSet"
)

// Kinds are the kinds an operator can follow.
var Kinds = []Kind{KindCloneSet, KindStatefulSet, KindDaemonSet}

// Follow names workloads whose pods an operator handles: every workload of
// Kind whose labels match Selector (nil matches every one).
type Follow struct {
	Kind     Kind
	Selector labels.Selector
}

// Workload is the workload controlling a pod, whatever its kind.
type Workload struct {
	Kind Kind
	// Object is the workload as read: *appsv1alpha1.CloneSet,
	// *appsv1beta1.StatefulSet or *appsv1beta1.DaemonSet.
	Object client.Object
	// Lifecycle is its spec.lifecycle; Selector its spec.selector.
	Lifecycle *pub.Lifecycle
	Selector  *metav1.LabelSelector
}

// Name is the workload's name.
func (w Workload) Name() string { return w.Object.GetName() }

// workloadOf wraps obj, a workload of a known kind, or says it is none.
func workloadOf(obj client.Object) (Workload, bool) {
	switch o := obj.(type) {
	case *appsv1alpha1.CloneSet:
		return Workload{Kind: KindCloneSet, Object: o, Lifecycle: o.Spec.Lifecycle, Selector: o.Spec.Selector}, true
	case *appsv1beta1.StatefulSet:
		return Workload{Kind: KindStatefulSet, Object: o, Lifecycle: o.Spec.Lifecycle, Selector: o.Spec.Selector}, true
	case *appsv1beta1.DaemonSet:
		return Workload{Kind: KindDaemonSet, Object: o, Lifecycle: o.Spec.Lifecycle, Selector: o.Spec.Selector}, true
	}
	return Workload{}, false
}

// newObject and newList are empty objects of a kind, in the version the
// SDK reads: CloneSet v1alpha1, StatefulSet and DaemonSet v1beta1 (what
// OpenKruise stores, so no conversion on the API server's side).
func newObject(k Kind) client.Object {
	switch k {
	case KindStatefulSet:
		return &appsv1beta1.StatefulSet{}
	case KindDaemonSet:
		return &appsv1beta1.DaemonSet{}
	}
	return &appsv1alpha1.CloneSet{}
}

func newList(k Kind) client.ObjectList {
	switch k {
	case KindStatefulSet:
		return &appsv1beta1.StatefulSetList{}
	case KindDaemonSet:
		return &appsv1beta1.DaemonSetList{}
	}
	return &appsv1alpha1.CloneSetList{}
}

func items(list client.ObjectList) []client.Object {
	var out []client.Object
	switch l := list.(type) {
	case *appsv1alpha1.CloneSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1beta1.StatefulSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1beta1.DaemonSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

// AddToScheme adds the types of every kind the SDK follows.
func AddToScheme(s *runtime.Scheme) error {
	if err := appsv1alpha1.AddToScheme(s); err != nil {
		return err
	}
	return appsv1beta1.AddToScheme(s)
}

// ValidateFollow says what is wrong with follows: an unknown kind, or a
// kind named twice.
func ValidateFollow(follows []Follow) error {
	seen := map[Kind]bool{}
	for _, f := range follows {
		switch f.Kind {
		case KindCloneSet, KindStatefulSet, KindDaemonSet:
		default:
			return fmt.Errorf("hook: cannot follow kind %q: supported kinds are %v", f.Kind, Kinds)
		}
		if seen[f.Kind] {
			return fmt.Errorf("hook: kind %q is followed twice", f.Kind)
		}
		seen[f.Kind] = true
	}
	return nil
}

// followed returns the Follow of the kind ref names, if it is followed.
// Any version of apps.kruise.io matches, so pods OpenKruise made are
// followed too.
func followed(follows []Follow, ref *metav1.OwnerReference) (Follow, bool) {
	if ref == nil {
		return Follow{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != appsv1alpha1.GroupVersion.Group {
		return Follow{}, false
	}
	for _, f := range follows {
		if string(f.Kind) == ref.Kind {
			return f, true
		}
	}
	return Follow{}, false
}

// WorkloadOf returns the followed workload controlling pod, or false when
// its controller is not followed, is gone, or is another object of the
// same name.
func WorkloadOf(ctx context.Context, c client.Reader, follows []Follow, pod *corev1.Pod) (Workload, bool, error) {
	ref := metav1.GetControllerOf(pod)
	f, ok := followed(follows, ref)
	if !ok {
		return Workload{}, false, nil
	}
	obj := newObject(f.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return Workload{}, false, nil
		}
		return Workload{}, false, err
	}
	if obj.GetUID() != ref.UID || (f.Selector != nil && !f.Selector.Matches(labels.Set(obj.GetLabels()))) {
		return Workload{}, false, nil
	}
	w, _ := workloadOf(obj)
	return w, true, nil
}

// ListWorkloads lists the workloads follows select, in namespace ("" for
// every namespace).
func ListWorkloads(ctx context.Context, c client.Reader, follows []Follow, namespace string) ([]Workload, error) {
	var out []Workload
	for _, f := range follows {
		var opts []client.ListOption
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if f.Selector != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: f.Selector})
		}
		list := newList(f.Kind)
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for _, obj := range items(list) {
			w, _ := workloadOf(obj)
			out = append(out, w)
		}
	}
	return out, nil
}

// PodsOf lists the pods w controls.
func PodsOf(ctx context.Context, c client.Reader, w Workload) ([]*corev1.Pod, error) {
	if w.Selector == nil {
		return nil, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(w.Selector)
	if err != nil || selector.Empty() {
		return nil, nil
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(w.Object.GetNamespace()), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range pods.Items {
		if ref := metav1.GetControllerOf(&pods.Items[i]); ref != nil && ref.UID == w.Object.GetUID() {
			out = append(out, &pods.Items[i])
		}
	}
	return out, nil
}
