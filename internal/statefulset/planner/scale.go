package planner

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/workloadref"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// scale fills the ordinals in range, replaces finished pods and deletes
// the condemned ones. OrderedReady goes one ordinal at a time, each only
// once every lower one is available; Parallel creates every missing pod at
// once, within scaleStrategy.maxUnavailable when it is set.
//
// blocked says an OrderedReady set stopped at an ordinal that is not
// ready to move on: no update goes past it either.
func scale(s Snapshot, v *view, p *Plan) (actions []podlife.Action, blocked bool) {
	mono := Monotonic(s.Set)
	budget := max(scaleBudget(s.Set), rolloutBudget(s))
	used := 0
	spent := func() bool { used++; return budget > 0 && used >= budget }
	pick := newRevisionPicker(v)
replicas:
	for _, ord := range v.ords.Each() {
		pod := v.slots[ord]
		name := PodName(s.Set.Name, ord)
		switch {
		case pod == nil:
			actions = append(actions, podlife.CreatePod{InstanceID: strconv.Itoa(ord), Revision: pick.forNew(ord), State: v.newState(),
				Reason: fmt.Sprintf("ordinal %d has no pod", ord)})
			if mono {
				return actions, true
			}
			if spent() {
				break replicas
			}
		case finished(pod):
			if pod.DeletionTimestamp == nil {
				if a := v.deleteOrWait(pod, nil, fmt.Sprintf("it %s and is replaced", pod.Status.Phase), false, p); a != nil {
					actions = append(actions, a)
				}
			}
			if mono {
				return actions, true
			}
			if spent() {
				break replicas
			}
		case heldForReplacement(pod):
			// Taken down for an update or a specified delete: it goes
			// once its hook lets it (already unavailable, it costs no
			// budget). The update step would never reach it in an
			// OrderedReady set, which stops here at the unavailable pod.
			if a := v.deleteOrWait(pod, nil, "it was held for replacement and its preDelete hook let it go", true, p); a != nil {
				actions = append(actions, a)
			}
			if mono {
				return actions, true
			}
		case pod.DeletionTimestamp != nil:
			if mono {
				p.Waiting = fmt.Sprintf("pod %s is terminating", name)
				return actions, true
			}
			if spent() {
				break replicas
			}
		default:
			if a := v.revive(pod); a != nil {
				actions = append(actions, a)
				if mono {
					return actions, true
				}
			}
			if (mono || budget > 0) && !v.available(pod) {
				if mono {
					p.Waiting = fmt.Sprintf("pod %s is not available (%s)", name, unavailableWhy(pod))
					// A pod the update took out (in place) is the update's to
					// finish: scaling stops here, the update goes on.
					return actions, !updating(pod)
				}
				if spent() {
					break replicas
				}
			}
		}
	}
	condemned, waiting := v.condemn(mono, p)
	return append(actions, condemned...), waiting
}

// condemn deletes the pods out of range, through their preDelete hook.
// OrderedReady deletes the highest first, one at a time. Unlike
// OpenKruise, a pod held in PreparingDelete does not count as unhealthy
// here: OpenKruise's rule then blocked a scale-down of two or more hooked
// pods for good (the higher one waited for the lower one's health, which
// the hook had taken away). Here the held pod waits for its operator and
// the next one follows it.
func (v *view) condemn(mono bool, p *Plan) ([]podlife.Action, bool) {
	var actions []podlife.Action
	for i, pod := range v.condemned {
		if pod.DeletionTimestamp != nil {
			if mono {
				p.Waiting = fmt.Sprintf("pod %s is terminating", pod.Name)
				return actions, true
			}
			continue
		}
		if mono && !Healthy(pod) && podfacts.State(pod) != pub.LifecycleStatePreparingDelete && !lowestUnhealthy(v.condemned[i:]) {
			p.Waiting = fmt.Sprintf("pod %s is not healthy; a lower condemned pod goes first", pod.Name)
			return actions, true
		}
		ord, _ := Ordinal(v.s.Set.Name, pod.Name)
		why := fmt.Sprintf("ordinal %d is out of range", ord)
		if v.ords.Reserved.Has(ord) {
			why = fmt.Sprintf("ordinal %d is reserved", ord)
		}
		var claims []*corev1.PersistentVolumeClaim
		if rp := v.s.Set.Spec.PersistentVolumeClaimRetentionPolicy; rp != nil && rp.WhenScaled == appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType {
			claims = v.claimsOf(ord)
		}
		if a := v.deleteOrWait(pod, claims, why, false, p); a != nil {
			actions = append(actions, a)
		}
		if mono {
			return actions, true
		}
	}
	return actions, false
}

// updating: the pod is in an in-place update's states.
func updating(pod *corev1.Pod) bool {
	switch podfacts.State(pod) {
	case pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating, pub.LifecycleStateUpdated:
		return true
	}
	return false
}

// heldForReplacement: a live pod in PreparingDelete marked
// specified-delete, which an update or a user asked to replace.
func heldForReplacement(pod *corev1.Pod) bool {
	_, marked := pod.Labels[appsv1alpha1.SpecifiedDeleteKey]
	return marked && pod.DeletionTimestamp == nil && podfacts.State(pod) == pub.LifecycleStatePreparingDelete
}

// lowestUnhealthy reports whether rest[0] is the lowest-ordinal unhealthy
// pod among the condemned from it down (rest is sorted highest first),
// held pods aside.
func lowestUnhealthy(rest []*corev1.Pod) bool {
	for _, other := range rest[1:] {
		if !Healthy(other) && podfacts.State(other) != pub.LifecycleStatePreparingDelete {
			return false
		}
	}
	return true
}

// deleteOrWait deletes a pod through its preDelete hook; a pod the hook
// already holds in PreparingDelete waits (nil), and the plan says so.
func (v *view) deleteOrWait(pod *corev1.Pod, claims []*corev1.PersistentVolumeClaim, why string, specified bool, p *Plan) podlife.Action {
	preDelete := v.life.Hook(podlife.PreDeleteHook)
	if podfacts.State(pod) == pub.LifecycleStatePreparingDelete && lifecycle.IsHooked(preDelete, pod) {
		if _, marked := pod.Labels[appsv1alpha1.SpecifiedDeleteKey]; marked || !specified {
			if p.Waiting == "" {
				p.Waiting, p.Blocked = fmt.Sprintf("pod %s waits in PreparingDelete for its preDelete hook", pod.Name), "HookWaiting"
			}
			return nil
		}
	}
	return v.life.DeleteOrHold(pod, claims, why, specified)
}

// revive brings back a pod held in PreparingDelete whose ordinal is in
// range again (replicas went back up). OpenKruise leaves it there, where
// it blocks an OrderedReady set for good. A pod someone asked to delete
// (specified-delete, a ReCreate update) stays held, and nothing is revived
// when a hook marks pods NotReady: its NotReady mark would stay (the rule
// CloneSet follows too).
func (v *view) revive(pod *corev1.Pod) podlife.Action {
	if podfacts.State(pod) != pub.LifecycleStatePreparingDelete || podlife.MarksPodNotReady(v.s.Set.Spec.Lifecycle) {
		return nil
	}
	if _, marked := pod.Labels[appsv1alpha1.SpecifiedDeleteKey]; marked {
		return nil
	}
	return v.life.SetState(pod, podlife.Transition{To: v.newState()}, "its ordinal is in range again")
}

// newState is the lifecycle state a new pod starts in: Normal, or
// PreparingNormal while a preNormal hook's handlers are not all on the
// template (OpenKruise creates Advanced StatefulSet pods Normal; it has
// no wait-until-scheduled step as CloneSet has).
func (v *view) newState() pub.LifecycleStateType {
	hook := v.life.Hook(podlife.PreNormalHook)
	if hook == nil {
		return pub.LifecycleStateNormal
	}
	t := v.s.Set.Spec.Template
	if lifecycle.IsAllHooked(hook, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: t.Labels, Finalizers: t.Finalizers}}) {
		return pub.LifecycleStateNormal
	}
	return pub.LifecycleStatePreparingNormal
}

// scaleBudget is scaleStrategy.maxUnavailable against replicas, rounded
// down, at least 1; 0 when unset (no budget).
func scaleBudget(set *appsv1beta1.StatefulSet) int {
	if set.Spec.ScaleStrategy == nil || set.Spec.ScaleStrategy.MaxUnavailable == nil {
		return 0
	}
	return scaled(set.Spec.ScaleStrategy.MaxUnavailable, int(workloadref.Replicas(set.Spec.Replicas)))
}

// rolloutBudget is, while a rolling update is under way, its
// maxUnavailable, which a scale budget is raised to: the pods the update
// deleted are made again within the budget that let them go. OpenKruise
// holds them to scaleStrategy.maxUnavailable, so with a smaller scale
// budget they are made a few at a time while the update keeps taking more,
// and availability stays at its floor for the whole rollout
// (openkruise/kruise#2285). Outside a rollout, and when no scale budget is
// set, it changes nothing.
func rolloutBudget(s Snapshot) int {
	us := s.Set.Spec.UpdateStrategy
	if scaleBudget(s.Set) == 0 || us.Type == appsv1.OnDeleteStatefulSetStrategyType || us.RollingUpdate == nil ||
		us.RollingUpdate.Paused || s.CurrentRevision == s.UpdateRevision {
		return 0
	}
	return updateBudget(s.Set)
}

// updateBudget is rollingUpdate.maxUnavailable against replicas, rounded
// down, at least 1; every pod when unset (the webhook sets 1).
func updateBudget(set *appsv1beta1.StatefulSet) int {
	replicas := int(workloadref.Replicas(set.Spec.Replicas))
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		return scaled(ru.MaxUnavailable, replicas)
	}
	return replicas
}

// scaled is an int or percent of replicas, rounded down, at least 1.
func scaled(v *intstr.IntOrString, replicas int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// unavailableWhy says briefly why a pod is not available.
func unavailableWhy(pod *corev1.Pod) string {
	switch st := podfacts.State(pod); {
	case st != "" && st != pub.LifecycleStateNormal:
		return "in " + string(st)
	case pod.Spec.NodeName == "":
		return "not scheduled"
	case !podfacts.HasReadyCondition(pod):
		return "not Ready"
	}
	return "Ready for less than minReadySeconds"
}
