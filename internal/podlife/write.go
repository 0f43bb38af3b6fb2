package podlife

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// PodWrite is the whole target of one write to a pod: every label,
// annotation, finalizer, image and condition it sets or removes, decided
// by a planner so that the executor only renders it (as a JSON patch guarded by the
// pod's labels and finalizers, see podpatch) and sends it.
type PodWrite struct {
	Labels            map[string]string `json:"labels,omitempty"`
	RemoveLabels      []string          `json:"removeLabels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	RemoveAnnotations []string          `json:"removeAnnotations,omitempty"`
	AddFinalizers     []string          `json:"addFinalizers,omitempty"`
	// Images are new container images, by container name.
	Images map[string]string `json:"images,omitempty"`
	// Conditions are set whole: status, reason, message and transition
	// time (kept by the render when the status does not change).
	Conditions []corev1.PodCondition `json:"conditions,omitempty"`
	// ExpectAnnotations are annotation values the write rests on beyond
	// the labels and finalizers every write rests on: it fails, and the
	// pod is planned again, if they changed meanwhile.
	ExpectAnnotations map[string]string `json:"expectAnnotations,omitempty"`
	// ExpectContainerIDs are the containers, by name, the write rests on:
	// it fails if the kubelet has reported another container since (an
	// in-place update's record must name the container its new images
	// replace, see podfacts.ContainersUpdated).
	ExpectContainerIDs map[string]string `json:"expectContainerIDs,omitempty"`
}

// Condition returns the condition of type t the write sets.
func (w PodWrite) Condition(t corev1.PodConditionType) (corev1.PodCondition, bool) {
	i := slices.IndexFunc(w.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
	if i < 0 {
		return corev1.PodCondition{}, false
	}
	return w.Conditions[i], true
}

// SetCondition sets c, replacing a condition of its type.
func (w *PodWrite) SetCondition(c corev1.PodCondition) {
	if i := slices.IndexFunc(w.Conditions, func(old corev1.PodCondition) bool { return old.Type == c.Type }); i >= 0 {
		w.Conditions[i] = c
		return
	}
	w.Conditions = append(w.Conditions, c)
}

// SetLabel sets label k to v.
func (w *PodWrite) SetLabel(k, v string) {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
}

// SetAnnotation sets annotation k to v.
func (w *PodWrite) SetAnnotation(k, v string) {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
}
