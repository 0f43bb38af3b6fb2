package planner

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// manage gives each node that should run a pod one, at the update
// revision, and takes away the pods a node should not keep: all of them
// where the set may no longer run, failed ones (after their back-off),
// extra ones, and with surge the old pod once the new one is available.
// Every deletion goes through the preDelete hook. Creations and deletions
// are each capped at burstReplicas per step.
func manage(v *view, p *Plan) []podlife.Action {
	var creates, deletes []podlife.Action
	need := v.needingPods()
	for _, sl := range v.slots {
		switch {
		case sl.place.ShouldRun && len(sl.pods) == 0:
			if need > 0 {
				need--
				creates = append(creates, podlife.CreatePod{InstanceID: sl.node.Name, Revision: v.s.UpdateHash,
					State: pub.LifecycleStateNormal, Reason: nodeReason(sl, "should run a pod and has none")})
			}
		case sl.place.ShouldContinue:
			deletes = append(deletes, v.tidy(sl, p)...)
		default:
			for _, pod := range sl.live {
				deletes = appendDelete(deletes, v.deleteOrWait(pod, nodeReason(sl, "no longer runs the set's pods"), p))
			}
		}
	}
	for _, pod := range v.stray {
		if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
			deletes = appendDelete(deletes, v.deleteOrWait(pod, fmt.Sprintf("its node %s does not exist", NodeOf(pod)), p))
		}
	}
	burst := v.burst()
	if len(creates) > burst {
		creates = creates[:burst]
	}
	if len(deletes) > burst {
		deletes = deletes[:burst]
	}
	return append(creates, deletes...)
}

// needingPods is how many nodes without a pod get one now: all of them,
// unless scaleStrategy.partitionedScaling holds the partition's share of
// them back (new nodes beyond it wait, in name order, rather than get a
// pod of the new revision while the partition keeps old ones).
func (v *view) needingPods() int {
	set := v.s.Set
	ru := set.Spec.UpdateStrategy.RollingUpdate
	all := len(v.slots)
	if set.Spec.ScaleStrategy == nil || !set.Spec.ScaleStrategy.PartitionedScaling ||
		set.Spec.UpdateStrategy.Type != appsv1beta1.RollingUpdateDaemonSetStrategyType || ru == nil {
		return all
	}
	partition := scaled(ru.Partition, int(set.Status.DesiredNumberScheduled), false)
	if partition == 0 {
		return all
	}
	newPods := 0
	for _, pod := range v.active {
		if v.updated(pod) {
			newPods++
		}
	}
	return max(v.desired-newPods-partition, 0)
}

// tidy is what a node that may keep the set's pod sheds: failed pods once
// their back-off is over, pods held in PreparingDelete once their hook
// lets them go, and all but one pod (with surge, all but the oldest new
// and the oldest old one, the old one going once the new one is
// available or when it is not Ready).
func (v *view) tidy(sl *slot, p *Plan) []podlife.Action {
	var deletes []podlife.Action
	var running []*corev1.Pod
	for _, pod := range sl.live {
		switch {
		case pod.Status.Phase == corev1.PodFailed:
			if wait := v.backoff(sl.node.Name); wait > 0 {
				p.Wake(wait)
				continue
			}
			deletes = appendDelete(deletes, v.deleteOrWait(pod, nodeReason(sl, "has a failed pod"), p))
		case podfacts.State(pod) == pub.LifecycleStatePreparingDelete:
			deletes = appendDelete(deletes, v.deleteOrWait(pod, nodeReason(sl, "let its pod go"), p))
		case pod.Labels[appsv1alpha1.SpecifiedDeleteKey] != "":
			// Someone asked for it to go (the hook guard, redirecting a
			// direct delete or eviction): through its hook, replaced.
			deletes = appendDelete(deletes, v.deleteOrWait(pod, "it is marked "+appsv1alpha1.SpecifiedDeleteKey, p))
		default:
			running = append(running, pod)
		}
	}
	if !v.surges() {
		for _, pod := range running[min(1, len(running)):] {
			deletes = appendDelete(deletes, v.deleteOrWait(pod, nodeReason(sl, "runs more than one pod"), p))
		}
		return deletes
	}
	var newest, oldest *corev1.Pod
	for _, pod := range running {
		switch {
		case v.updated(pod) && newest == nil:
			newest = pod
		case !v.updated(pod) && oldest == nil:
			oldest = pod
		default:
			deletes = appendDelete(deletes, v.deleteOrWait(pod, nodeReason(sl, "runs more than one pod of a revision"), p))
		}
	}
	if newest != nil && oldest != nil && (!podfacts.HasReadyCondition(oldest) || v.available(newest)) {
		deletes = appendDelete(deletes, v.deleteOrWait(oldest, nodeReason(sl, "runs its new pod"), p))
	}
	return deletes
}

func (v *view) backoff(node string) time.Duration {
	if v.s.FailedBackoff == nil {
		return 0
	}
	return v.s.FailedBackoff(node)
}

// surges reports whether the rollout starts new pods before deleting old
// ones (maxSurge above zero, Standard only).
func (v *view) surges() bool {
	ru := v.s.Set.Spec.UpdateStrategy.RollingUpdate
	return v.s.Set.Spec.UpdateStrategy.Type == appsv1beta1.RollingUpdateDaemonSetStrategyType && ru != nil &&
		ru.Type != appsv1beta1.InplaceRollingUpdateType && scaled(ru.MaxSurge, 1, true) > 0
}

// deleteOrWait deletes pod through its preDelete hook: a pod the hook
// holds in PreparingDelete waits (nil), one it does not yet hold moves
// there.
func (v *view) deleteOrWait(pod *corev1.Pod, why string, p *Plan) podlife.Action {
	preDelete := v.life.Hook(podlife.PreDeleteHook)
	if podfacts.State(pod) == pub.LifecycleStatePreparingDelete && lifecycle.IsHooked(preDelete, pod) {
		if p.Waiting == "" {
			p.Waiting, p.Blocked = fmt.Sprintf("pod %s waits in PreparingDelete for its preDelete hook", pod.Name), "HookWaiting"
		}
		return nil
	}
	return v.life.DeleteOrHold(pod, nil, why, false)
}

func appendDelete(actions []podlife.Action, a podlife.Action) []podlife.Action {
	if a == nil {
		return actions
	}
	return append(actions, a)
}
