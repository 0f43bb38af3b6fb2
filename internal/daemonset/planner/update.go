package planner

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// update moves nodes to the update revision: within maxUnavailable, an old
// pod deleted (or updated in place) at a time per node, the new one made
// by manage; with maxSurge, a new pod started beside the old one, which
// manage deletes once the new one is available. Only the nodes partition
// and the node selector let go are updated.
func update(v *view, p *Plan) ([]podlife.Action, error) {
	us := v.s.Set.Spec.UpdateStrategy
	ru := us.RollingUpdate
	if us.Type != appsv1beta1.RollingUpdateDaemonSetStrategyType || ru == nil {
		return nil, nil
	}
	if ru.Paused != nil && *ru.Paused {
		if v.outdated() > 0 {
			p.Waiting, p.Blocked = "the rollout is paused", "Paused"
		}
		return nil, nil
	}
	nodes := v.updatable(ru, p)
	maxUnavailable := scaled(ru.MaxUnavailable, v.desired, true)
	maxSurge := scaled(ru.MaxSurge, v.desired, true)
	if maxUnavailable == 0 && maxSurge == 0 && v.desired > 0 {
		maxUnavailable = 1
	}
	if v.surges() {
		return v.surge(nodes, maxSurge, p), nil
	}
	return v.replace(nodes, maxUnavailable, ru.Type == appsv1beta1.InplaceRollingUpdateType, p)
}

// updatable are the nodes the rollout may touch, in OpenKruise's order:
// those already updated or being replaced, then those the node selector
// picks (all others when there is none), cut to leave partition nodes
// old. Nodes that should no longer run a pod are left out: their pods go
// (manage deletes them) rather than block the rollout
// (openkruise/kruise#2387; DaemonSetPruneIneligibleNodes, off by default
// there).
func (v *view) updatable(ru *appsv1beta1.RollingUpdateDaemonSet, p *Plan) []*slot {
	var updated, updating, selected, rest []*slot
	var selector labels.Selector
	if ru.Selector != nil {
		selector, _ = metav1.LabelSelectorAsSelector(ru.Selector)
	}
	for i := len(v.slots) - 1; i >= 0; i-- { // names descending, as OpenKruise
		sl := v.slots[i]
		if !sl.place.ShouldRun {
			continue
		}
		newPods, oldPods := v.split(sl.live)
		switch {
		case len(newPods) > 0 || len(sl.live) > 1:
			updated = append(updated, sl)
		case len(sl.live) == 0 || podfacts.State(oldPods[0]) == pub.LifecycleStatePreparingDelete:
			updating = append(updating, sl)
		case selector != nil && selector.Matches(labels.Set(sl.node.Labels)):
			selected = append(selected, sl)
		default:
			rest = append(rest, sl)
		}
	}
	out := append(updated, updating...)
	if selector != nil {
		out = append(out, selected...)
	} else {
		out = append(out, rest...)
	}
	partition := scaled(ru.Partition, int(v.s.Set.Status.DesiredNumberScheduled), false)
	if keep := v.desired - partition; keep < len(out) {
		out = out[:max(keep, 0)]
		if p.Waiting == "" && v.outdatedOn(out) == 0 && v.outdated() > 0 {
			p.Waiting, p.Blocked = fmt.Sprintf("partition keeps %d nodes at their old revision", partition), "Partitioned"
		}
	}
	return out
}

// replace is the rollout without surge: an old pod is replaced (deleted,
// or updated in place when the template change allows it) while the nodes
// without an available pod stay within maxUnavailable.
func (v *view) replace(nodes []*slot, maxUnavailable int, inPlace bool, p *Plan) ([]podlife.Action, error) {
	unavailable := v.unavailableOutside(nodes)
	var broken, candidates []*corev1.Pod
	for _, sl := range nodes {
		newPods, oldPods := v.split(sl.live)
		switch {
		case len(sl.live) != 1:
			unavailable++ // none, or more than one: manage's to settle
		case len(newPods) == 1:
			if !v.available(newPods[0]) {
				unavailable++
			}
		case podfacts.State(oldPods[0]) == pub.LifecycleStatePreparingDelete:
			unavailable++ // on its way out, through its hook
		case !v.available(oldPods[0]):
			broken = append(broken, oldPods[0])
		default:
			candidates = append(candidates, oldPods[0])
		}
	}
	room := max(maxUnavailable-unavailable, 0)
	var picked []*corev1.Pod
	if v.s.ReplaceUnavailableAtOnce {
		// OpenKruise v1.9: an old pod that is not available is replaced
		// whatever the budget; a Ready pod under minReadySeconds counts
		// as not available, which took down a whole ingress tier
		// (#1323).
		picked = append(broken, candidates[:min(room, len(candidates))]...)
	} else {
		// An old pod that is not available goes first but within the
		// budget, like any other: the budget is what a rollout may take
		// out of service at once, and such a pod may be serving.
		all := append(broken, candidates...)
		picked = all[:min(room, len(all))]
	}
	if len(picked) == 0 && len(broken)+len(candidates) > 0 && p.Waiting == "" {
		p.Waiting = fmt.Sprintf("%d of at most %d nodes are without an available pod", unavailable, maxUnavailable)
	}
	return v.replacePods(picked, inPlace)
}

// unavailableOutside counts the nodes the rollout may not touch now
// (partition, the node selector) that are without an available pod: they
// are out of service all the same. OpenKruise counts only the nodes it
// may touch, so a broken node outside them let it take maxUnavailable
// more.
func (v *view) unavailableOutside(nodes []*slot) int {
	n := 0
	for _, sl := range v.slots {
		if sl.place.ShouldRun && !slices.Contains(nodes, sl) && (len(sl.live) != 1 || !v.available(sl.live[0])) {
			n++
		}
	}
	return n
}

// replacePods deletes the picked pods through their preDelete hook, or
// updates them in place where they can be (at most burstReplicas at once:
// the others wait for the next step rather than be recreated).
func (v *view) replacePods(picked []*corev1.Pod, inPlace bool) ([]podlife.Action, error) {
	var actions []podlife.Action
	updates := 0
	for _, pod := range picked {
		if inPlace {
			if u, ok := v.inPlace(pod); ok {
				if updates >= v.burst() {
					continue
				}
				updates++
				a, err := v.life.UpdateInPlaceStep(pod, u)
				if err != nil {
					return nil, err
				}
				if a != nil {
					actions = append(actions, a)
				}
				continue
			}
		}
		actions = appendDelete(actions, v.life.DeleteOrHold(pod, nil, "update to revision "+v.s.UpdateHash, false))
	}
	return actions, nil
}

// inPlace says how pod can be updated in place: it must have the
// InPlaceUpdateReady readiness gate (a pod made under Standard lacks it
// and is recreated once), its revision's template must be known, and the
// change must be one of images (or metadata) only.
func (v *view) inPlace(pod *corev1.Pod) (podlife.InPlaceUpdate, bool) {
	if !podfacts.HasReadinessGate(pod, pub.InPlaceUpdateReady) {
		return podlife.InPlaceUpdate{}, false
	}
	from, to := v.s.Templates[revisionHash(pod)], v.s.Templates[v.s.UpdateHash]
	if from == nil || to == nil {
		return podlife.InPlaceUpdate{}, false
	}
	change, ok := podlife.CanUpdateInPlace(from, to)
	if !ok {
		return podlife.InPlaceUpdate{}, false
	}
	return podlife.InPlaceUpdate{Change: change, To: to, Revision: v.s.UpdateHash, TakeBudget: true}, true
}

// surge is the rollout with maxSurge: a node whose old pod is available
// gets a new pod beside it, while the nodes running both stay within
// maxSurge; a node whose old pod is not available gets its new pod at
// once. manage deletes the old pod once the new one is available.
func (v *view) surge(nodes []*slot, maxSurge int, p *Plan) []podlife.Action {
	surging := 0
	var now, candidates []*slot
	for _, sl := range nodes {
		newPods, oldPods := v.split(sl.live)
		switch {
		case len(oldPods) != 1 || len(newPods) > 1 || podfacts.State(oldPods[0]) == pub.LifecycleStatePreparingDelete:
			// nothing old to replace, or more pods than surge allows:
			// manage's to settle first
		case len(newPods) == 0 && !v.available(oldPods[0]):
			now = append(now, sl)
		case len(newPods) == 0:
			candidates = append(candidates, sl)
		case !v.available(newPods[0]):
			surging++
		}
	}
	room := max(maxSurge-surging, 0)
	if room == 0 && len(candidates) > 0 && p.Waiting == "" {
		p.Waiting = fmt.Sprintf("%d of at most %d nodes run a new pod that is not available yet", surging, maxSurge)
	}
	var actions []podlife.Action
	for _, sl := range append(now, candidates[:min(room, len(candidates))]...) {
		actions = append(actions, podlife.CreatePod{InstanceID: sl.node.Name, Revision: v.s.UpdateHash,
			State: pub.LifecycleStateNormal, Reason: nodeReason(sl, "gets its new pod beside the old one")})
	}
	return actions
}

// split sorts a node's live pods into those at the update revision and
// the others, oldest first.
func (v *view) split(pods []*corev1.Pod) (newPods, oldPods []*corev1.Pod) {
	for _, pod := range pods {
		if v.updated(pod) {
			newPods = append(newPods, pod)
		} else {
			oldPods = append(oldPods, pod)
		}
	}
	return newPods, oldPods
}

// outdated counts the live pods not at the update revision on nodes that
// should run one.
func (v *view) outdated() int { return v.outdatedOn(v.slots) }

func (v *view) outdatedOn(slots []*slot) int {
	n := 0
	for _, sl := range slots {
		if !sl.place.ShouldRun {
			continue
		}
		_, oldPods := v.split(sl.live)
		n += len(oldPods)
	}
	return n
}
