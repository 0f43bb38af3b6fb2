// Package planner decides what a CloneSet controller does next. It is pure:
// given a snapshot of a CloneSet, its pods and revisions, it returns the
// actions to take, each with a reason, and never talks to the cluster. The
// controller executes the actions. Rollout maths, pod ordering and the hook
// rules all live here, where tables and randomized sequences test them.
package planner

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/disruption"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Snapshot is what the planner sees of a CloneSet.
type Snapshot struct {
	CloneSet *appsv1alpha1.CloneSet
	// Pods are the CloneSet's active pods: owned, not terminating and not
	// finished.
	Pods []*corev1.Pod
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
	// RecreateOnClaimTemplateChange recreates, rather than updates in
	// place, a pod whose revision records other volumeClaimTemplates than
	// the update revision (OpenKruise's RecreatePodWhenChangeVCTInCloneSetGate,
	// off by default as there).
	RecreateOnClaimTemplateChange bool
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

// ActionType is what an action does.
type ActionType string

const (
	// CreatePod creates a pod, with PVCs for its instance id, at Revision.
	CreatePod ActionType = "CreatePod"
	// DeletePod deletes a pod and its PVCs.
	DeletePod ActionType = "DeletePod"
	// SetState moves a pod to another lifecycle state.
	SetState ActionType = "SetState"
	// InitPodReady sets the pod's Conditions True, so its readiness gates
	// do not hold it NotReady: KruisePodReady and InPlaceUpdateReady on a
	// new pod, InPlaceUpdateReady after an interrupted in-place update.
	InitPodReady ActionType = "InitPodReady"
	// UpdateInPlace changes a pod's images, labels and annotations to
	// Revision without recreating it; the pod goes Updating and NotReady
	// until its containers run the new images.
	UpdateInPlace ActionType = "UpdateInPlace"
	// FinishGrace applies the images an in-place update held back for its
	// grace period.
	FinishGrace ActionType = "FinishGrace"
	// UpdateNextBatch applies the next container batch of an in-place
	// update by container priority (KRUISE_CONTAINER_PRIORITY) once the
	// previous batch runs and is Ready.
	UpdateNextBatch ActionType = "UpdateNextBatch"
)

// Action is one step of a plan: what it does to which pod, and why. A
// CreatePod carries the pod to make, every other action but DeletePod the
// writes to its pod, each written out in full.
type Action struct {
	Type ActionType
	// Pod is the pod acted on; nil for CreatePod.
	Pod *corev1.Pod
	// Create is the pod a CreatePod makes.
	Create *Creation
	// Writes are the writes to Pod, in order; each is sent only once the
	// one before it succeeded.
	Writes []PodWrite
	// Reason says why, for events and logs.
	Reason string
	// Warnings are said, as Warning events, once the action is done.
	Warnings []Warning
}

// State is the lifecycle state the action leaves its pod in: the one a
// created pod starts in, or the one its writes set; "" for none.
func (a Action) State() pub.LifecycleStateType {
	if a.Create != nil {
		return a.Create.State
	}
	for i := len(a.Writes) - 1; i >= 0; i-- {
		if s, ok := a.Writes[i].Labels[pub.LifecycleStateKey]; ok {
			return pub.LifecycleStateType(s)
		}
	}
	return ""
}

// Revision is the revision the action moves its pod to: the one a created
// pod is made from, or the one an in-place update writes; "" for none.
func (a Action) Revision() string {
	if a.Create != nil {
		return a.Create.Revision
	}
	for _, w := range a.Writes {
		if r, ok := w.Labels[appsv1.ControllerRevisionHashLabelKey]; ok {
			return r
		}
	}
	return ""
}

// Warning is a Warning event an action calls for: Reason is its reason
// code, Message its text.
type Warning struct {
	Reason, Message string
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
	Actions []Action
	// Diffs are those the phase acted on: the scaling view for the scale
	// and refresh phases, the updating view for the update phase.
	Diffs Diffs
	// ScaleUpLimited is set when scaleStrategy.maxUnavailable held back
	// creations.
	ScaleUpLimited bool
	// RequeueAfter asks for another look after this long even if nothing
	// changes, e.g. when a pod will pass minReadySeconds.
	RequeueAfter time.Duration
	// Held are pods the plan would have deleted or updated in place but
	// the disruption check did not allow now.
	Held []Held
}

// Held is a pod whose disruption the check refused, and why.
type Held struct {
	Pod    *corev1.Pod
	Reason string
}

// heldRetry is when a plan with held pods looks again: a budget frees up
// without any event on the CloneSet.
const heldRetry = 5 * time.Second

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
	if g := graceWait(s.Pods, s.Now); g > 0 && (p.RequeueAfter == 0 || g < p.RequeueAfter) {
		p.RequeueAfter = g + time.Second/2 // past the second boundary the timestamps are cut to
	}

	// New pods' KruisePodReady conditions are set whatever else the step
	// does, so that scaling up does not wait for scaling to finish before
	// its pods can become Ready.
	if actions := scale(s, &p, podsToDelete); len(actions) > 0 {
		p.Phase, p.Actions = PhaseScale, withInitPodReady(s, p.allowed(s, actions))
		return p, nil
	}
	actions, err := refreshStates(s)
	if err != nil {
		return p, err
	}
	if len(actions) > 0 {
		p.Phase, p.Actions = PhaseRefresh, withInitPodReady(s, actions)
		return p, nil
	}
	p.Phase, p.Diffs = PhaseUpdate, diffs(UpdatingView)
	p.Actions, err = update(s, p.Diffs)
	p.Actions = withInitPodReady(s, p.allowed(s, p.Actions))
	return p, err
}

// allowed drops the actions that would take a pod out of service when the
// disruption check does not allow it now, recording them as held.
func (p *Plan) allowed(s Snapshot, actions []Action) []Action {
	if s.Disruptions == nil {
		return actions
	}
	kept := actions[:0:0]
	for _, a := range actions {
		kind, disrupts := disruptionOf(a)
		if disrupts {
			if ok, reason := s.Disruptions.Allow(a.Pod, kind); !ok {
				p.Held = append(p.Held, Held{Pod: a.Pod, Reason: reason})
				continue
			}
		}
		kept = append(kept, a)
	}
	if len(p.Held) > 0 && (p.RequeueAfter == 0 || heldRetry < p.RequeueAfter) {
		p.RequeueAfter = heldRetry
	}
	return kept
}

// disruptionOf says whether an action takes its pod out of service, and
// how: deleting it or holding it for deletion, updating it in place or
// holding it for that.
func disruptionOf(a Action) (disruption.Kind, bool) {
	switch {
	case a.Type == DeletePod:
		return disruption.Delete, true
	case a.Type == SetState && a.State() == pub.LifecycleStatePreparingDelete:
		return disruption.Delete, true
	case a.Type == UpdateInPlace:
		return disruption.InPlaceUpdate, true
	case a.Type == SetState && a.State() == pub.LifecycleStatePreparingUpdate && podfacts.State(a.Pod) != pub.LifecycleStatePreparingUpdate:
		return disruption.InPlaceUpdate, true
	}
	return "", false
}

func scale(s Snapshot, p *Plan, podsToDelete map[string]bool) []Action {
	cs, d := s.CloneSet, p.Diffs
	if actions := revivePreparingDelete(s, podsToDelete); len(actions) > 0 {
		return actions
	}
	if d.ScaleUpNum > 0 {
		p.ScaleUpLimited = d.ScaleUpLimit < d.ScaleUpNum
		if d.ScaleUpLimit > 0 {
			return creates(s, d)
		}
	}
	preDelete := lifecycleHook(cs, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreDelete })

	// Pods held in PreparingDelete go as soon as their hook lets them.
	var actions []Action
	var held, specified []*corev1.Pod
	for _, pod := range s.Pods {
		switch {
		case podfacts.State(pod) == pub.LifecycleStatePreparingDelete:
			held = append(held, pod)
			if !lifecycle.IsHooked(preDelete, pod) {
				actions = append(actions, Action{Type: DeletePod, Pod: pod, Reason: "its preDelete hook was released"})
			}
		case IsSpecifiedDelete(pod, podsToDelete):
			specified = append(specified, pod)
		}
	}
	if len(actions) > 0 {
		return actions
	}

	// Pods someone asked to delete: unavailable ones at once, available
	// ones within the budget.
	budget := d.DeleteReadyLimit
	for _, pod := range specified {
		if podfacts.IsAvailable(pod, 0, s.Now) {
			if budget <= 0 {
				continue
			}
			budget--
		}
		actions = append(actions, deleteOrHold(s, preDelete, pod, "it was specified for deletion"))
	}
	if len(actions) > 0 || len(specified) > 0 || len(held) > 0 {
		// Ordinary scale-in waits until specified and held pods are gone.
		return actions
	}

	if d.ScaleDownNum > 0 {
		var old, updated []*corev1.Pod
		for _, pod := range s.Pods {
			if IsUpdated(pod, s.UpdateRevision) {
				updated = append(updated, pod)
			} else {
				old = append(old, pod)
			}
		}
		fromOld := min(d.ScaleDownNum, d.ScaleDownNumOldRevision, len(old))
		spread := cs.Spec.Template.Spec.TopologySpreadConstraints
		SortForScaleIn(old, spread, s.NodeLabels, cs.Spec.MinReadySeconds, s.Now)
		SortForScaleIn(updated, spread, s.NodeLabels, cs.Spec.MinReadySeconds, s.Now)
		chosen := append(old[:fromOld:fromOld], updated[:min(d.ScaleDownNum-fromOld, len(updated))]...)
		for _, pod := range chosen {
			if podfacts.IsAvailable(pod, 0, s.Now) {
				if budget <= 0 {
					continue
				}
				budget--
			}
			actions = append(actions, deleteOrHold(s, preDelete, pod, fmt.Sprintf("replicas is %d", replicasOf(cs))))
		}
	}
	return actions
}

// revivePreparingDelete takes pods held in PreparingDelete back when replicas
// went up again: rather than create new pods, it returns held ones to
// PreparingNormal, from where they become Normal as new pods do. Pods
// someone asked to delete stay held. Nothing is revived when a hook marks
// pods NotReady: the NotReady mark of a held pod is never lifted, so a
// revived pod would stay NotReady (OpenKruise's rule, kept).
func revivePreparingDelete(s Snapshot, podsToDelete map[string]bool) []Action {
	if MarksPodNotReady(s.CloneSet) {
		return nil
	}
	leaving := 0
	var held []*corev1.Pod
	for _, pod := range s.Pods {
		preparing := podfacts.State(pod) == pub.LifecycleStatePreparingDelete
		if preparing || IsSpecifiedDelete(pod, podsToDelete) {
			leaving++
		}
		if preparing && !IsSpecifiedDelete(pod, podsToDelete) {
			held = append(held, pod)
		}
	}
	missing := replicasOf(s.CloneSet) - (len(s.Pods) - leaving)
	var actions []Action
	for _, pod := range held {
		if missing <= 0 {
			break
		}
		actions = append(actions, setState(s, pod, transition{to: pub.LifecycleStatePreparingNormal},
			"replicas went up again while it was held for deletion"))
		missing--
	}
	return actions
}

// deleteOrHold deletes a pod, unless its preDelete hook holds it, in which
// case it moves to PreparingDelete and waits there.
func deleteOrHold(s Snapshot, preDelete *pub.LifecycleHook, pod *corev1.Pod, why string) Action {
	return deleteOrHoldAs(s, preDelete, pod, why, false)
}

// recreate deletes a pod picked to be replaced at the update revision, or,
// while its preDelete hook holds it, moves it to PreparingDelete marked
// specified-delete in the same write. The mark is what OpenKruise's
// ReCreate writes on every picked pod; we write it only on held ones,
// where it matters: a pod held for replacement is never revived by a
// scale-up (revivePreparingDelete), which would otherwise take it back to
// PreparingNormal, re-register it and pick it again, round after round.
func recreate(s Snapshot, preDelete *pub.LifecycleHook, pod *corev1.Pod, why string) Action {
	return deleteOrHoldAs(s, preDelete, pod, why, true)
}

func deleteOrHoldAs(s Snapshot, preDelete *pub.LifecycleHook, pod *corev1.Pod, why string, specified bool) Action {
	if lifecycle.IsHooked(preDelete, pod) {
		t := transition{to: pub.LifecycleStatePreparingDelete, specifiedDelete: specified}
		if preDelete.MarkPodNotReady {
			t.addNotReady = pub.PodReadyKeyPreDeleteHook
		}
		return setState(s, pod, t, why+"; its preDelete hook holds it")
	}
	return Action{Type: DeletePod, Pod: pod, Reason: why}
}

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
// NotReady, in which case its pods get the KruisePodReady readiness gate.
//
// OpenKruise's pod webhook gives every pod of a Kruise workload the gate,
// which costs every new pod a status write (the condition set True) before
// it can be Ready. We give it only to pods whose CloneSet can use it; a
// CloneSet that turns markPodNotReady on later has it on its new pods.
func MarksPodNotReady(cs *appsv1alpha1.CloneSet) bool {
	l := cs.Spec.Lifecycle
	return l != nil && ((l.PreDelete != nil && l.PreDelete.MarkPodNotReady) || (l.InPlaceUpdate != nil && l.InPlaceUpdate.MarkPodNotReady))
}

// withInitPodReady adds to actions the setting True of readiness-gate
// conditions that should be True and are not: KruisePodReady and
// InPlaceUpdateReady on pods that carry the gate but not the condition yet,
// and InPlaceUpdateReady left False by an in-place update that never
// started (the controller stopped between the condition and the images, and
// the pod was not picked again, say after a rollback). Pods the actions
// already touch are left out: a plan's actions must not race on one pod.
func withInitPodReady(s Snapshot, actions []Action) []Action {
	touched := map[*corev1.Pod]bool{}
	for _, a := range actions {
		// A state change repairs and initialises in its own write (see
		// setState).
		touched[a.Pod] = true
	}
	preNormal := lifecycleHook(s.CloneSet, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreNormal })
	for _, pod := range s.Pods {
		if touched[pod] {
			continue
		}
		set := missingGateConditions(pod)
		reason := "a new pod's readiness gates"
		if len(set) > 0 && preNormal == nil && podfacts.State(pod) == pub.LifecycleStatePreparingNormal && pod.Spec.NodeName == "" {
			// It cannot be Ready before it runs, and the write that
			// makes it Normal once scheduled carries the conditions.
			set = nil
		}
		if strandedNotReady(pod) {
			set = append(set, pub.InPlaceUpdateReady)
			reason = "an in-place update that never started left it NotReady"
		}
		if len(set) > 0 {
			actions = append(actions, initPodReady(s, pod, set, reason))
		}
	}
	return actions
}

// missingGateConditions are the readiness gates of ours on the pod whose
// condition it does not have yet: set True once the pod may become Ready.
func missingGateConditions(pod *corev1.Pod) []corev1.PodConditionType {
	var missing []corev1.PodConditionType
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType != pub.KruisePodReadyConditionType && g.ConditionType != pub.InPlaceUpdateReady {
			continue
		}
		if _, found := conditionStatus(pod, g.ConditionType); !found {
			missing = append(missing, g.ConditionType)
		}
	}
	return missing
}

// strandedNotReady reports whether pod's InPlaceUpdateReady condition is
// False though no in-place update of it is under way.
func strandedNotReady(pod *corev1.Pod) bool {
	status, _ := conditionStatus(pod, pub.InPlaceUpdateReady)
	return status == corev1.ConditionFalse && podfacts.State(pod) != pub.LifecycleStateUpdating && podfacts.Grace(pod) == nil && pod.DeletionTimestamp == nil
}

func conditionStatus(pod *corev1.Pod, t corev1.PodConditionType) (corev1.ConditionStatus, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status, true
		}
	}
	return "", false
}

// creates plans the missing pods: the first ScaleUpNumOldRevision of them at
// the current revision, so partition holds, the rest at the update revision.
// Instance ids of PVCs left by pods deleted out of band are reused first, so
// a rebuilt pod gets its predecessor's name and volumes.
func creates(s Snapshot, d Diffs) []Action {
	taken := map[string]bool{}
	for _, pod := range s.Pods {
		taken[pod.Labels[appsv1alpha1.CloneSetInstanceID]] = true
	}
	var free []string
	seen := map[string]bool{}
	for _, pvc := range s.PVCs {
		id := pvc.Labels[appsv1alpha1.CloneSetInstanceID]
		if id != "" && !taken[id] && !seen[id] {
			seen[id] = true
			free = append(free, id)
		}
		taken[id] = true
	}
	sort.Strings(free)
	if s.CloneSet.Spec.ScaleStrategy.DisablePVCReuse {
		free = nil
	}
	// Every new pod starts in PreparingNormal, as in OpenKruise v1.9: one
	// without a preNormal hook becomes Normal once it is scheduled, which
	// the pod binding webhook makes part of the bind itself (see
	// BindingState), so it costs no write of ours.
	state := pub.LifecycleStatePreparingNormal
	if s.CreateNormal && lifecycleHook(s.CloneSet, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreNormal }) == nil {
		state = pub.LifecycleStateNormal
	}
	var actions []Action
	for i := 0; i < d.ScaleUpLimit; i++ {
		var id string
		if len(free) > 0 {
			id, free = free[0], free[1:]
		} else {
			for id = s.NewInstanceID(); taken[id]; id = s.NewInstanceID() {
			}
		}
		taken[id] = true
		rev, why := s.UpdateRevision, "replicas is missing pods"
		if i < d.ScaleUpNumOldRevision {
			rev, why = s.CurrentRevision, "replicas is missing pods; partition keeps them at the current revision"
		}
		actions = append(actions, Action{Type: CreatePod, Create: &Creation{InstanceID: id, Revision: rev, State: state}, Reason: why})
	}
	return actions
}

// refreshStates moves pods out of PreparingNormal: when every handler of the
// preNormal hook is present, or, for pods created while a preNormal hook was
// declared that has since been removed, once they are scheduled.
func refreshStates(s Snapshot) ([]Action, error) {
	preNormal := lifecycleHook(s.CloneSet, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreNormal })
	var actions []Action
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
func update(s Snapshot, d Diffs) ([]Action, error) {
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
	var actions []Action
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
		if a.Type != "" {
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

// UnreusedPVCs applies disablePVCReuse: it returns the PVCs whose instance has
// no active pod, each with the inactive (terminating or finished) pod of the
// same instance if there is one. The controller hands such a PVC to that pod,
// so it goes when the pod goes, and deletes the others at once. all holds
// every owned pod, active or not.
func UnreusedPVCs(cs *appsv1alpha1.CloneSet, pvcs []*corev1.PersistentVolumeClaim, all []*corev1.Pod) map[*corev1.PersistentVolumeClaim]*corev1.Pod {
	if !cs.Spec.ScaleStrategy.DisablePVCReuse || len(pvcs) == 0 {
		return nil
	}
	active, inactive := map[string]bool{}, map[string]*corev1.Pod{}
	for _, pod := range all {
		id := pod.Labels[appsv1alpha1.CloneSetInstanceID]
		if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
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
