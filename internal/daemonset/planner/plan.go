// Package planner decides what an Advanced DaemonSet controller does next.
// It is pure: given a snapshot of a set, the nodes and the set's pods, it
// returns the actions to take, each with a reason, and never talks to the
// cluster. The pod's life (the preDelete hook, markPodNotReady, in-place
// update) is podlife's, shared with CloneSet and Advanced StatefulSet;
// what is here is the daemon arithmetic: which nodes should run a pod, and
// how the rollout moves node by node within maxUnavailable or maxSurge,
// partition and the node selector.
package planner

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// Snapshot is what the planner sees of a set.
type Snapshot struct {
	Set *appsv1beta1.DaemonSet
	// Nodes are every node of the cluster.
	Nodes []*corev1.Node
	// Pods are the set's pods, terminating and finished ones included.
	Pods []*corev1.Pod
	// UpdateHash is the update revision's short hash, the
	// controller-revision-hash its pods carry.
	UpdateHash string
	// Templates are the pod templates of the known revisions by short
	// hash, for deciding whether an update can be made in place.
	Templates map[string]*corev1.PodTemplateSpec
	// FailedBackoff is how long the failed pod of a node still waits
	// before it is replaced (0: now); nil replaces at once.
	FailedBackoff func(node string) time.Duration
	// ReplaceUnavailableAtOnce is OpenKruise v1.9's rule: an old pod that
	// is not available is replaced whatever maxUnavailable says
	// (openkruise/kruise#1323). Off, such pods are replaced within it.
	ReplaceUnavailableAtOnce bool
	// Disruptions is consulted before a pod is deleted or updated in place
	// (PodUnavailableBudget); nil allows everything.
	Disruptions disruption.Check
	Now         time.Time
}

// Phase is the part of the reconcile a plan comes from.
type Phase string

const (
	// PhaseManage creates and deletes pods so that each node that should
	// run one has one.
	PhaseManage Phase = "Manage"
	// PhaseRefresh moves pods between lifecycle states.
	PhaseRefresh Phase = "Refresh"
	// PhaseUpdate moves pods to the update revision.
	PhaseUpdate Phase = "Update"
)

// Plan is what to do now. Actions of one plan are independent of each
// other and may run in any order or concurrently.
type Plan struct {
	Phase   Phase
	Actions []podlife.Action
	podlife.Pace
}

// Compute plans the next step: pods created and deleted node by node
// first; when that has nothing to do, lifecycle refreshes; then the
// update. One step never both manages and updates, so a pod is never
// planned twice.
func Compute(s Snapshot) (Plan, error) {
	var p Plan
	v := newView(s)
	p.Wake(v.requeue)
	if g := podlife.GraceWait(v.active, s.Now); g > 0 {
		p.Wake(g + time.Second/2)
	}
	if s.Set.DeletionTimestamp != nil {
		return p, nil
	}
	if actions := p.Allow(s.Disruptions, manage(v, &p)); len(actions) > 0 || len(p.Held) > 0 {
		p.Phase, p.Actions = PhaseManage, v.life.WithInitPodReady(v.active, actions)
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
	actions, err = update(v, &p)
	p.Actions = v.life.WithInitPodReady(v.active, p.Allow(s.Disruptions, actions))
	return p, err
}

// refresh moves pods on once their in-place update is done.
func refresh(v *view) ([]podlife.Action, error) {
	var actions []podlife.Action
	for _, pod := range v.active {
		a, ok, err := v.life.RefreshInPlace(pod, v.s.UpdateHash)
		if err != nil {
			return nil, err
		}
		if ok && a != nil {
			actions = append(actions, a)
		}
	}
	return actions, nil
}

// lifeOf is the pod life a DaemonSet's pods have: the preDelete hook
// only. OpenKruise v1.9 acts on no other hook for this kind (its webhook
// refuses inPlaceUpdate and preNormal is ignored), and so neither does
// Lifeline.
func lifeOf(set *appsv1beta1.DaemonSet, now time.Time) podlife.Life {
	l := podlife.Life{Now: now}
	if set.Spec.Lifecycle != nil && set.Spec.Lifecycle.PreDelete != nil {
		l.Lifecycle = &pub.Lifecycle{PreDelete: set.Spec.Lifecycle.PreDelete}
	}
	return l
}
