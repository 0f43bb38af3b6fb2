package planner

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// unreusedClaims applies disablePVCReuse, so no new pod picks up an old
// instance's claims: a claim whose instance has no active pod is handed to
// that instance's terminating or finished pod, to go with it, or deleted
// when there is none.
func unreusedClaims(s Snapshot) []podlife.Action {
	unreused := unreusedPVCs(s.CloneSet, s.PVCs, slices.Concat(s.Pods, s.Unselected, s.Inactive))
	var out []podlife.Action
	for _, pvc := range s.PVCs {
		pod, unreused := unreused[pvc]
		switch {
		case !unreused:
		case pod != nil:
			out = append(out, podlife.HandOverClaim{Claim: pvc, Pod: pod, Reason: "disablePVCReuse: it goes with its terminating pod"})
		default:
			out = append(out, podlife.DeleteClaim{Claim: pvc, Reason: "disablePVCReuse: no pod of its instance is left"})
		}
	}
	return out
}

// unreusedPVCs applies disablePVCReuse: it returns the PVCs whose instance has
// no active pod, each with the inactive (terminating or finished) pod of the
// same instance if there is one. all holds every owned pod, active or not.
func unreusedPVCs(cs *appsv1alpha1.CloneSet, pvcs []*corev1.PersistentVolumeClaim, all []*corev1.Pod) map[*corev1.PersistentVolumeClaim]*corev1.Pod {
	if !cs.Spec.ScaleStrategy.DisablePVCReuse || len(pvcs) == 0 {
		return nil
	}
	active, inactive := map[string]bool{}, map[string]*corev1.Pod{}
	for _, pod := range all {
		id := pod.Labels[appsv1alpha1.CloneSetInstanceID]
		if podfacts.IsActive(pod) {
			active[id] = true
		} else {
			inactive[id] = pod
		}
	}
	out := map[*corev1.PersistentVolumeClaim]*corev1.Pod{}
	for _, pvc := range pvcs {
		if id := pvc.Labels[appsv1alpha1.CloneSetInstanceID]; !active[id] {
			out[pvc] = inactive[id]
		}
	}
	return out
}

// claimsOf are the claims deleted with pod: those of its instance, when
// the CloneSet has volumeClaimTemplates.
func claimsOf(s Snapshot, pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	id := pod.Labels[appsv1alpha1.CloneSetInstanceID]
	if id == "" || len(s.CloneSet.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	var out []*corev1.PersistentVolumeClaim
	for _, pvc := range s.PVCs {
		if pvc.Labels[appsv1alpha1.CloneSetInstanceID] == id {
			out = append(out, pvc)
		}
	}
	return out
}
