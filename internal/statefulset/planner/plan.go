// Package planner decides what an Advanced StatefulSet controller does
// next. It is pure: given a snapshot of a set, its pods and revisions, it
// returns the actions to take, each with a reason, and never talks to the
// cluster. The pod's life (lifecycle hooks, markPodNotReady, in-place
// update) is podlife's, shared with CloneSet; what is here is the set's
// own arithmetic: ordinals, their order, partition and maxUnavailable.
package planner

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Snapshot is what the planner sees of a set.
type Snapshot struct {
	Set *appsv1beta1.StatefulSet
	// Pods are the set's pods with an ordinal name, terminating and
	// finished ones included: they still hold their ordinal.
	Pods []*corev1.Pod
	// Orphans are live pods of the namespace with no controller that
	// could be the set's (the controller has checked, live, that the set
	// is the one read and not being deleted); adopt picks those it takes.
	Orphans []*corev1.Pod
	// Claims are the set's claims by name, for the retention policy.
	Claims map[string]*corev1.PersistentVolumeClaim
	// UpdateRevision and CurrentRevision are revision names.
	UpdateRevision, CurrentRevision string
	// Templates are the pod templates of the known revisions, by name,
	// for deciding whether an update can be made in place.
	Templates map[string]*corev1.PodTemplateSpec
	// StartOrdinal honours spec.ordinals.start (OpenKruise's
	// StatefulSetStartOrdinal gate, off by default there).
	StartOrdinal bool
	// Disruptions is consulted before a pod is deleted or updated in place
	// (PodUnavailableBudget); nil allows everything.
	Disruptions disruption.Check
	Now         time.Time
}

// Phase is the part of the reconcile a plan comes from.
type Phase string

const (
	// PhaseScale creates and deletes pods to match the ordinal range.
	PhaseScale Phase = "Scale"
	// PhaseRefresh moves pods between lifecycle states.
	PhaseRefresh Phase = "Refresh"
	// PhaseUpdate moves pods to the update revision.
	PhaseUpdate Phase = "Update"
)

// Plan is what to do now. Actions of one plan are independent of each other
// and may run in any order or concurrently.
type Plan struct {
	Phase   Phase
	Actions []podlife.Action
	podlife.Pace
}

// Compute plans the next step: adoption and release first, then scaling;
// when scaling has nothing to do, lifecycle refreshes; then the update.
// One step never both scales and updates, so a pod is never planned twice.
func Compute(s Snapshot) (Plan, error) {
	var p Plan
	v := newView(s)
	p.RequeueAfter = v.requeue
	if g := podlife.GraceWait(v.active, s.Now); g > 0 {
		p.Wake(g + time.Second/2)
	}
	if s.Set.DeletionTimestamp != nil {
		return p, nil
	}
	if actions := adopt(s); len(actions) > 0 {
		p.Phase, p.Actions = PhaseAdopt, actions
		return p, nil
	}
	scaled, blocked := scale(s, v, &p)
	if actions := p.Allow(s.Disruptions, scaled); len(actions) > 0 || len(p.Held) > 0 {
		p.Phase, p.Actions = PhaseScale, v.life.WithInitPodReady(v.active, actions)
		return p, nil
	}
	actions, err := refresh(v)
	if err != nil {
		return p, err
	}
	if len(actions) > 0 {
		p.Phase, p.Actions = PhaseRefresh, v.life.WithInitPodReady(v.active, actions)
		return p, nil
	}
	p.Phase = PhaseUpdate
	if !blocked {
		actions, err = update(s, v, &p)
	}
	p.Actions = v.life.WithInitPodReady(v.active, p.Allow(s.Disruptions, actions))
	return p, err
}

// Monotonic reports whether the set moves one ordinal at a time.
func Monotonic(set *appsv1beta1.StatefulSet) bool {
	return set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
}

// MinReadySeconds is rollingUpdate.minReadySeconds, which an Advanced
// StatefulSet applies to scaling too.
func MinReadySeconds(set *appsv1beta1.StatefulSet) int32 {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MinReadySeconds != nil {
		return *ru.MinReadySeconds
	}
	return 0
}

// Healthy is OpenKruise's isHealthy: Normal (or no state), running, Ready
// and not terminating.
func Healthy(pod *corev1.Pod) bool {
	st := podfacts.State(pod)
	return (st == "" || st == "Normal") && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && podfacts.HasReadyCondition(pod)
}

// finished reports whether the pod ran to completion or failed.
func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}
