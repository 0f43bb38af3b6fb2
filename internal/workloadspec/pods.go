package workloadspec

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// NewPod is what every workload's new pod starts from: the template's
// metadata and spec (copied, tmpl is not changed), the workload as its
// controller, the labels the kind adds (its revision, its identity), the
// lifecycle state it starts in, and the readiness gates the workload's
// strategy needs, in the order given, each added only when the template
// does not declare it already (as OpenKruise's in-place documentation has
// users write).
type NewPod struct {
	Owner metav1.Object
	Kind  schema.GroupVersionKind
	// Name, or GenerateName for a name the kind does not choose.
	Name, GenerateName string
	Labels             map[string]string
	State              pub.LifecycleStateType
	Now                time.Time
	Gates              []corev1.PodConditionType
}

// Build builds the pod from tmpl.
func (n NewPod) Build(tmpl *corev1.PodTemplateSpec) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: n.Owner.GetNamespace(), Name: n.Name, GenerateName: n.GenerateName,
			Labels:          make(map[string]string, len(tmpl.Labels)+len(n.Labels)+1),
			Annotations:     make(map[string]string, len(tmpl.Annotations)+1),
			Finalizers:      append([]string(nil), tmpl.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(n.Owner, n.Kind)},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	for k, v := range tmpl.Labels {
		pod.Labels[k] = v
	}
	for k, v := range tmpl.Annotations {
		pod.Annotations[k] = v
	}
	for k, v := range n.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[pub.LifecycleStateKey] = string(n.State)
	pod.Annotations[pub.LifecycleTimestampKey] = n.Now.Format(time.RFC3339)
	for _, g := range n.Gates {
		if !podfacts.HasReadinessGate(pod, g) {
			pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
		}
	}
	return pod
}

// NewClaims are a new pod's claims from the workload's claim templates,
// each named by name of its template and labelled with the template's
// labels, the selector's matchLabels and labels; owned by owner when set.
func NewClaims(namespace string, templates []corev1.PersistentVolumeClaim, selector *metav1.LabelSelector,
	name func(template string) string, labels map[string]string, owner *metav1.OwnerReference) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, vct := range templates {
		pvc := vct.DeepCopy()
		pvc.Name, pvc.Namespace = name(vct.Name), namespace
		pvc.ResourceVersion, pvc.UID = "", ""
		if pvc.Labels == nil {
			pvc.Labels = map[string]string{}
		}
		if selector != nil {
			for k, v := range selector.MatchLabels {
				pvc.Labels[k] = v
			}
		}
		for k, v := range labels {
			pvc.Labels[k] = v
		}
		if owner != nil {
			pvc.OwnerReferences = append(pvc.OwnerReferences, *owner)
		}
		out = append(out, pvc)
	}
	return out
}
