package planner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// inPlaceUpdate decides what happens to a pod picked for update under an
// in-place strategy: recreated (InPlaceIfPossible) or refused (InPlaceOnly)
// when the change cannot be made in place or, with
// RecreatePodsWhenVCTChanges, its claim templates changed; otherwise as the
// pod's life has it (held by the inPlaceUpdate hook, or updated in place).
func inPlaceUpdate(s Snapshot, pod *corev1.Pod, preDelete *pub.LifecycleHook) (podlife.Action, error) {
	cs := s.CloneSet
	inPlaceOnly := cs.Spec.UpdateStrategy.Type == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	from := s.Templates[revisionOf(pod, s.Templates)]
	change, ok := podlife.CanUpdateInPlace(from, s.Templates[s.UpdateRevision])
	if !ok {
		if inPlaceOnly {
			return nil, fmt.Errorf("find Pod %s update strategy is InPlaceOnly but can not update in-place", pod.Name)
		}
		return recreate(s, preDelete, pod, fmt.Sprintf("recreate for update to revision %s: the change cannot be made in place", s.UpdateRevision)), nil
	}
	if !inPlaceOnly && claimTemplatesChanged(s, pod) {
		return recreate(s, preDelete, pod, fmt.Sprintf("recreate for update to revision %s: its volumeClaimTemplates changed", s.UpdateRevision)), nil
	}
	u := podlife.InPlaceUpdate{Change: change, To: s.Templates[s.UpdateRevision], Revision: s.UpdateRevision, TakeBudget: s.Disruptions != nil}
	if ips := cs.Spec.UpdateStrategy.InPlaceUpdateStrategy; ips != nil {
		u.GraceSeconds = ips.GracePeriodSeconds
	}
	return life(s).UpdateInPlaceStep(pod, u)
}

// revisionOf finds the name of the revision a pod is at among the known
// templates, matching full name or short hash.
func revisionOf(pod *corev1.Pod, templates map[string]*corev1.PodTemplateSpec) string {
	for name := range templates {
		if podfacts.AtRevision(pod, name) {
			return name
		}
	}
	return ""
}

// claimTemplatesChanged reports whether, with RecreatePodsWhenVCTChanges,
// the pod's revision and the update revision record different
// volumeClaimTemplates hashes, so that the pod is recreated with new claims
// rather than updated in place on its old ones (OpenKruise's gate
// RecreatePodWhenChangeVCTInCloneSetGate). A revision without a recorded
// hash, say from before the hash was kept, never forces a recreation.
func claimTemplatesChanged(s Snapshot, pod *corev1.Pod) bool {
	if !s.RecreatePodsWhenVCTChanges {
		return false
	}
	from, fromKnown := s.ClaimTemplateHashes[revisionOf(pod, s.Templates)]
	to, toKnown := s.ClaimTemplateHashes[s.UpdateRevision]
	return fromKnown && toKnown && from != to
}
