package hook

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// Kind names a kind of workload whose pods carry lifecycle hooks: a
// registered kind (pkg/workload), by name for those of apps.kruise.io.
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

// Kinds are the kinds an operator can follow: every registered workload
// kind (pkg/workload), by name for those of apps.kruise.io and as
// Kind.group for others (Fleet.example.com).
func Kinds() []Kind {
	var out []Kind
	for _, k := range workload.Kinds() {
		out = append(out, kindOf(k))
	}
	return out
}

func kindOf(k workload.Kind) Kind {
	if k.Group == appsv1beta1.GroupVersion.Group {
		return Kind(k.Name)
	}
	return Kind(k.String())
}

// describe finds the registered kind k names.
func (k Kind) describe() (workload.Kind, bool) {
	for _, d := range workload.Kinds() {
		if kindOf(d) == k {
			return d, true
		}
	}
	return workload.Kind{}, false
}

// Follow names workloads whose pods an operator handles: every workload of
// Kind whose labels match Selector (nil matches every one).
type Follow struct {
	Kind     Kind
	Selector labels.Selector
}

// Workload is the workload controlling a pod, whatever its kind.
type Workload struct {
	Kind Kind
	// Object is the workload as read, in the version its kind is stored
	// in: *appsv1beta1.CloneSet, *appsv1beta1.StatefulSet,
	// *appsv1beta1.DaemonSet, or an unstructured object of a custom kind.
	Object client.Object
	// Lifecycle is its spec.lifecycle; Selector its spec.selector.
	Lifecycle *pub.Lifecycle
	Selector  *metav1.LabelSelector
	// View is all the descriptor reads of it (replicas, partition, status).
	View workload.View
}

// Name is the workload's name.
func (w Workload) Name() string { return w.Object.GetName() }

// workloadOf wraps obj, a workload of a registered kind, or says it is none.
func workloadOf(obj client.Object) (Workload, bool) {
	v, ok := workload.ReadObject(obj)
	if !ok {
		return Workload{}, false
	}
	return Workload{Kind: kindOf(v.Kind), Object: obj, Lifecycle: v.Lifecycle, Selector: v.Selector, View: v}, true
}

// AddToScheme adds the types of the kinds of apps.kruise.io (custom kinds
// are read unstructured).
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
		if _, ok := f.Kind.describe(); !ok {
			return fmt.Errorf("hook: cannot follow kind %q: supported kinds are %v", f.Kind, Kinds())
		}
		if seen[f.Kind] {
			return fmt.Errorf("hook: kind %q is followed twice", f.Kind)
		}
		seen[f.Kind] = true
	}
	return nil
}

// followed returns the Follow of the kind ref names, and the kind, if it
// is followed. Any served version matches, so pods OpenKruise made are
// followed too.
func followed(follows []Follow, ref *metav1.OwnerReference) (Follow, workload.Kind, bool) {
	k, ok := workload.ForOwner(ref)
	if !ok {
		return Follow{}, workload.Kind{}, false
	}
	for _, f := range follows {
		if f.Kind == kindOf(k) {
			return f, k, true
		}
	}
	return Follow{}, workload.Kind{}, false
}

// WorkloadOf returns the followed workload controlling pod, or false when
// its controller is not followed, is gone, or is another object of the
// same name.
func WorkloadOf(ctx context.Context, c client.Reader, follows []Follow, pod *corev1.Pod) (Workload, bool, error) {
	ref := metav1.GetControllerOf(pod)
	f, k, ok := followed(follows, ref)
	if !ok {
		return Workload{}, false, nil
	}
	obj := k.New()
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
		k, ok := f.Kind.describe()
		if !ok {
			return nil, fmt.Errorf("hook: unknown kind %q", f.Kind)
		}
		views, err := k.List(ctx, c, opts...)
		if err != nil {
			return nil, err
		}
		for _, v := range views {
			out = append(out, Workload{Kind: kindOf(v.Kind), Object: v.Object, Lifecycle: v.Lifecycle, Selector: v.Selector, View: v})
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
