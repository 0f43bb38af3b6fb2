package planner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// refreshStates moves pods on once their in-place update is done, and out
// of PreparingNormal (see podlife).
func refreshStates(s Snapshot) ([]podlife.Action, error) {
	l := life(s)
	var actions []podlife.Action
	for _, pod := range s.Pods {
		a, ok, err := l.RefreshInPlace(pod, s.UpdateRevision)
		if err != nil {
			return nil, err
		}
		if !ok {
			a = l.RefreshPreparingNormal(pod)
		}
		if a != nil {
			actions = append(actions, a)
		}
	}
	return actions, nil
}

// update picks the pods to move to the update revision now and marks them
// for recreation.
func update(s Snapshot, d Diffs) ([]podlife.Action, error) {
	cs := s.CloneSet
	if cs.Spec.UpdateStrategy.Paused || d.UpdateNum <= 0 {
		return nil, nil
	}
	var candidates []*corev1.Pod
	for _, pod := range s.Pods {
		if !podfacts.AtRevision(pod, s.UpdateRevision) && podfacts.State(pod) != pub.LifecycleStatePreparingDelete {
			candidates = append(candidates, pod)
		}
	}
	var scatter []ScatterTerm
	for _, t := range cs.Spec.UpdateStrategy.ScatterStrategy {
		scatter = append(scatter, ScatterTerm{Key: t.Key, Value: t.Value})
	}
	SortForUpdate(candidates, cs.Spec.UpdateStrategy.PriorityStrategy, scatter)
	picked := LimitUpdate(candidates, s.Pods, d.UpdateNum, d.UpdateMaxUnavailable, s.UpdateRevision, cs.Spec.MinReadySeconds, s.Now)
	// A picked pod goes through the same delete-or-hold step as a pod
	// specified for deletion, preDelete hook and all; its successor is
	// created at the update revision by the next scale step.
	//
	// OpenKruise first labels the pod specified-delete and deletes it in a
	// later reconcile. That costs a write per pod and a round trip per
	// batch, which made its rollouts slower than a Deployment's; the budget
	// check above is the same either way, so we delete at once.
	preDelete := life(s).Hook(podlife.PreDeleteHook)
	var actions []podlife.Action
	inPlace := cs.Spec.UpdateStrategy.Type == appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType ||
		cs.Spec.UpdateStrategy.Type == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	for _, pod := range picked {
		if _, marked := pod.Labels[appsv1alpha1.SpecifiedDeleteKey]; marked {
			continue // the scale step deletes it
		}
		if !inPlace {
			actions = append(actions, recreate(s, preDelete, pod, fmt.Sprintf("recreate for update to revision %s", s.UpdateRevision)))
			continue
		}
		a, err := inPlaceUpdate(s, pod, preDelete)
		if err != nil {
			return actions, err
		}
		if a != nil {
			actions = append(actions, a)
		}
	}
	return actions, nil
}

// life is the pod's life as this CloneSet has it.
func life(s Snapshot) podlife.Life {
	return podlife.Life{Lifecycle: s.CloneSet.Spec.Lifecycle, Now: s.Now}
}
