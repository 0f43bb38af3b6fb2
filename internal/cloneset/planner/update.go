package planner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// refreshStates moves pods out of PreparingNormal: when every handler of the
// preNormal hook is present, or, for pods created while a preNormal hook was
// declared that has since been removed, once they are scheduled.
func refreshStates(s Snapshot) ([]podlife.Action, error) {
	preNormal := lifecycleHook(s.CloneSet, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreNormal })
	var actions []podlife.Action
	for _, pod := range s.Pods {
		a, ok, err := refreshInPlace(s, pod)
		if err != nil {
			return nil, err
		}
		if ok {
			actions = append(actions, a)
			continue
		}
		if podfacts.State(pod) != pub.LifecycleStatePreparingNormal {
			continue
		}
		switch {
		case preNormal == nil && pod.Spec.NodeName != "":
			actions = append(actions, setState(s, pod, transition{to: pub.LifecycleStateNormal}, "it is scheduled"))
		case preNormal != nil && lifecycle.IsAllHooked(preNormal, pod):
			actions = append(actions, setState(s, pod, transition{to: pub.LifecycleStateNormal}, "every preNormal handler is present"))
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
		if !IsUpdated(pod, s.UpdateRevision) && podfacts.State(pod) != pub.LifecycleStatePreparingDelete {
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
	preDelete := lifecycleHook(cs, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreDelete })
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

func lifecycleHook(cs *appsv1alpha1.CloneSet, pick func(*pub.Lifecycle) *pub.LifecycleHook) *pub.LifecycleHook {
	if cs.Spec.Lifecycle == nil {
		return nil
	}
	return pick(cs.Spec.Lifecycle)
}
