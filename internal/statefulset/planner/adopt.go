package planner

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// PhaseAdopt adopts orphaned pods, releases unmatched ones and repairs
// the identity labels of the set's own.
const PhaseAdopt Phase = "Adopt"

// The identity labels a set's pods carry, as a StatefulSet's.
const (
	PodNameLabel  = "statefulset.kubernetes.io/pod-name"
	PodIndexLabel = "apps.kubernetes.io/pod-index"
)

// adopt is what a StatefulSet's controller reference manager does: an
// orphaned, live pod with one of the set's ordinal names that its selector
// matches becomes the set's (a native StatefulSet deleted with
// --cascade=orphan hands its pods over this way), and an owned pod the
// selector no longer matches is released.
func adopt(s Snapshot) []podlife.Action {
	if s.Set.Spec.Selector == nil {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(s.Set.Spec.Selector)
	if err != nil || selector.Empty() {
		return nil
	}
	owner := metav1.OwnerReference{APIVersion: appsv1beta1.GroupVersion.String(), Kind: "StatefulSet", Name: s.Set.Name, UID: s.Set.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	var out []podlife.Action
	for _, pod := range s.Orphans {
		if _, ok := Ordinal(s.Set.Name, pod.Name); ok && pod.DeletionTimestamp == nil && selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, podlife.AdoptPod{Pod: pod, Owner: owner, Reason: "an orphaned pod with one of its names, which its selector matches"})
		}
	}
	for _, pod := range s.Pods {
		if !selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, podlife.ReleasePod{Pod: pod, OwnerUID: s.Set.UID, Reason: "it no longer matches the selector"})
		} else if a, ok := relabel(s.Set.Name, pod); ok {
			out = append(out, a)
		}
	}
	return out
}

// relabel puts back a live pod's identity labels, its name and ordinal, if
// someone removed or changed them: a Service or a PodDisruptionBudget may
// select on them. (OpenKruise repairs them with a full pod update; a
// guarded label patch is enough.)
func relabel(set string, pod *corev1.Pod) (podlife.Action, bool) {
	ord, ok := Ordinal(set, pod.Name)
	if !ok || pod.DeletionTimestamp != nil {
		return nil, false
	}
	want := map[string]string{PodNameLabel: pod.Name, PodIndexLabel: strconv.Itoa(ord)}
	var w podlife.PodWrite
	for k, v := range want {
		if pod.Labels[k] != v {
			w.SetLabel(k, v)
		}
	}
	if len(w.Labels) == 0 {
		return nil, false
	}
	return podlife.Relabel{Pod: pod, Writes: []podlife.PodWrite{w}, Reason: "its identity labels were changed; put back"}, true
}
