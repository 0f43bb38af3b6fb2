package planner

import (
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// UpdatesInPlace reports whether the CloneSet's strategy may update pods in
// place, in which case its new pods get the InPlaceUpdateReady readiness
// gate, which holds a pod NotReady while its containers change. OpenKruise
// gives every CloneSet pod the gate, costing each a status write before it
// can be Ready; a ReCreate CloneSet never needs it.
func UpdatesInPlace(cs *appsv1alpha1.CloneSet) bool {
	t := cs.Spec.UpdateStrategy.Type
	return t == appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType || t == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
}

// MarksPodNotReady reports whether a hook of the CloneSet may make its pods
// NotReady, in which case its pods get the KruisePodReady readiness gate
// (see podlife.MarksPodNotReady).
func MarksPodNotReady(cs *appsv1alpha1.CloneSet) bool {
	return podlife.MarksPodNotReady(cs.Spec.Lifecycle)
}

// withInitPodReady adds the readiness-gate conditions the CloneSet's pods
// lack to a plan's actions (see podlife.Life.WithInitPodReady).
func withInitPodReady(s Snapshot, actions []podlife.Action) []podlife.Action {
	return life(s).WithInitPodReady(s.Pods, actions)
}
