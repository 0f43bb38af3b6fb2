package planner

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

func scale(s Snapshot, p *Plan, podsToDelete map[string]bool) []podlife.Action {
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
	preDelete := life(s).Hook(podlife.PreDeleteHook)

	// Pods held in PreparingDelete go as soon as their hook lets them.
	var actions []podlife.Action
	var held, specified []*corev1.Pod
	for _, pod := range s.Pods {
		switch {
		case podfacts.State(pod) == pub.LifecycleStatePreparingDelete:
			held = append(held, pod)
			if !lifecycle.IsHooked(preDelete, pod) {
				actions = append(actions, podlife.DeletePod{Pod: pod, Claims: claimsOf(s, pod), Reason: "its preDelete hook was released"})
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
			if podfacts.AtRevision(pod, s.UpdateRevision) {
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
func revivePreparingDelete(s Snapshot, podsToDelete map[string]bool) []podlife.Action {
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
	var actions []podlife.Action
	for _, pod := range held {
		if missing <= 0 {
			break
		}
		actions = append(actions, life(s).SetState(pod, podlife.Transition{To: pub.LifecycleStatePreparingNormal},
			"replicas went up again while it was held for deletion"))
		missing--
	}
	return actions
}

// deleteOrHold deletes a pod, unless its preDelete hook holds it, in which
// case it moves to PreparingDelete and waits there.
func deleteOrHold(s Snapshot, preDelete *pub.LifecycleHook, pod *corev1.Pod, why string) podlife.Action {
	return deleteOrHoldAs(s, preDelete, pod, why, false)
}

// recreate deletes a pod picked to be replaced at the update revision, or,
// while its preDelete hook holds it, moves it to PreparingDelete marked
// specified-delete in the same write. The mark is what OpenKruise's
// ReCreate writes on every picked pod; we write it only on held ones,
// where it matters: a pod held for replacement is never revived by a
// scale-up (revivePreparingDelete), which would otherwise take it back to
// PreparingNormal, re-register it and pick it again, round after round.
func recreate(s Snapshot, preDelete *pub.LifecycleHook, pod *corev1.Pod, why string) podlife.Action {
	return deleteOrHoldAs(s, preDelete, pod, why, true)
}

func deleteOrHoldAs(s Snapshot, preDelete *pub.LifecycleHook, pod *corev1.Pod, why string, specified bool) podlife.Action {
	return life(s).DeleteOrHold(pod, claimsOf(s, pod), why, specified)
}

// creates plans the missing pods: the first ScaleUpNumOldRevision of them at
// the current revision, so partition holds, the rest at the update revision.
// Instance ids of PVCs left by pods deleted out of band are reused first, so
// a rebuilt pod gets its predecessor's name and volumes.
func creates(s Snapshot, d Diffs) []podlife.Action {
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
	if s.CreateNormal && life(s).Hook(podlife.PreNormalHook) == nil {
		state = pub.LifecycleStateNormal
	}
	var actions []podlife.Action
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
		actions = append(actions, podlife.CreatePod{InstanceID: id, Revision: rev, State: state, Reason: why})
	}
	return actions
}
