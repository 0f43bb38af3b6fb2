// Package planner decides what a CloneSet controller does next. It is pure:
// given a snapshot of a CloneSet, its pods and revisions, it returns the
// actions to take, each with a reason, and never talks to the cluster. The
// controller executes the actions. Rollout maths, pod ordering and the hook
// rules all live here, where tables and randomized sequences test them.
package planner

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Snapshot is what the planner sees of a CloneSet.
type Snapshot struct {
	CloneSet *appsv1alpha1.CloneSet
	// Pods are the CloneSet's active pods: owned, not terminating and not
	// finished.
	Pods []*corev1.Pod
	// Unselected are owned pods the selector no longer matches, to
	// release; Inactive are owned, selected pods that are terminating or
	// finished. Neither counts.
	Unselected, Inactive []*corev1.Pod
	// PVCs are the CloneSet's PVCs that are not being deleted.
	PVCs []*corev1.PersistentVolumeClaim
	// UpdateRevision and CurrentRevision are revision names.
	UpdateRevision, CurrentRevision string
	// ExcludePreparingDelete leaves PreparingDelete pods out of the replica
	// count (the CloneSet label or the controller flag).
	ExcludePreparingDelete bool
	// Templates are the pod templates of the known revisions, by name, for
	// deciding whether an update can be made in place.
	Templates map[string]*corev1.PodTemplateSpec
	// NodeLabels maps the pods' nodes to their labels, for the template's
	// topology spread constraints; nil when it has none.
	NodeLabels map[string]map[string]string
	// ClaimTemplateHashes are the volumeClaimTemplates hashes the known
	// revisions record, by revision name; a revision without one is absent.
	ClaimTemplateHashes map[string]string
	// RecreatePodsWhenVCTChanges recreates, rather than updates in
	// place, a pod whose revision records other volumeClaimTemplates than
	// the update revision (OpenKruise's RecreatePodWhenChangeVCTInCloneSetGate,
	// off by default as there).
	RecreatePodsWhenVCTChanges bool
	// CreateNormal creates pods that have no preNormal hook in Normal, as
	// OpenKruise up to v1.8 did. By default they start in PreparingNormal
	// and become Normal once scheduled, as in v1.9.
	CreateNormal bool
	// Disruptions is consulted before a pod is deleted or updated in place
	// (PodUnavailableBudget); nil allows everything.
	Disruptions disruption.Check
	// NewInstanceID returns a random instance id; the planner rerolls ids
	// that are taken.
	NewInstanceID func() string
	Now           time.Time
}

// Phase is the part of the reconcile a plan comes from.
type Phase string

const (
	// PhaseScale creates and deletes pods.
	PhaseScale Phase = "Scale"
	// PhaseRefresh moves pods between lifecycle states.
	PhaseRefresh Phase = "Refresh"
	// PhaseUpdate moves pods to the update revision.
	PhaseUpdate Phase = "Update"
)

// Plan is what to do now. Actions of one plan are independent of each other
// and may run in any order or concurrently.
type Plan struct {
	// Phase says where the actions come from; only one phase acts per step.
	Phase   Phase
	Actions []podlife.Action
	// Diffs are those the phase acted on: the scaling view for the scale
	// and refresh phases, the updating view for the update phase.
	Diffs Diffs
	// ScaleUpLimited is set when scaleStrategy.maxUnavailable held back
	// creations.
	ScaleUpLimited bool
	podlife.Pace
}

// Compute plans the next step. It scales first; only when scaling has
// nothing to do does it refresh lifecycle states and then update pods, so
// one step never both scales and updates (as OpenKruise).
func Compute(s Snapshot) (Plan, error) {
	cs := s.CloneSet
	b, err := ResolveRolloutLimits(cs)
	if err != nil {
		return Plan{}, err
	}
	podsToDelete := map[string]bool{}
	for _, name := range cs.Spec.ScaleStrategy.PodsToDelete {
		podsToDelete[name] = true
	}
	minReady := cs.Spec.MinReadySeconds
	diffs := func(view DiffView) Diffs {
		return CalculateDiffs(b, s.Pods, s.UpdateRevision, view, podsToDelete, minReady, s.ExcludePreparingDelete, s.Now)
	}
	p := Plan{Diffs: diffs(ScalingView)}
	p.RequeueAfter = nextAvailability(s.Pods, minReady, s.Now)
	if g := podlife.GraceWait(s.Pods, s.Now); g > 0 && (p.RequeueAfter == 0 || g < p.RequeueAfter) {
		p.RequeueAfter = g + time.Second/2 // past the second boundary the timestamps are cut to
	}

	// New pods' KruisePodReady conditions are set whatever else the step
	// does, so that scaling up does not wait for scaling to finish before
	// its pods can become Ready.
	if actions := scale(s, &p, podsToDelete); len(actions) > 0 {
		p.Phase, p.Actions = PhaseScale, everyStep(s, p.Allow(s.Disruptions, actions))
		return p, nil
	}
	actions, err := refreshStates(s)
	if err != nil {
		return p, err
	}
	if len(actions) > 0 {
		p.Phase, p.Actions = PhaseRefresh, everyStep(s, actions)
		return p, nil
	}
	p.Phase, p.Diffs = PhaseUpdate, diffs(UpdatingView)
	p.Actions, err = update(s, p.Diffs)
	p.Actions = everyStep(s, p.Allow(s.Disruptions, p.Actions))
	return p, err
}

// nextAvailability is when the next Ready pod passes minReadySeconds, or 0.
func nextAvailability(pods []*corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	var next time.Duration
	for _, pod := range pods {
		if wait := podfacts.UntilAvailable(pod, minReadySeconds, now); wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	return next
}
