package planner

import (
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/internal/updatesort"
	"github.com/lifeline-k8s/lifeline/internal/workloadref"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// revisionPicker chooses the revision of each new pod so that partition
// holds: in an ordered update the ordinals below partition stay at the
// current revision; in an unordered one, partition pods in all.
type revisionPicker struct {
	v *view
	// rank is each ordinal's place in the range.
	rank map[int]int
	// old counts the pods, existing and planned, not at the update
	// revision (unordered update).
	old int
}

func newRevisionPicker(v *view) *revisionPicker {
	r := &revisionPicker{v: v, rank: map[int]int{}}
	for i, ord := range v.ords.Each() {
		r.rank[ord] = i
	}
	for _, pod := range v.slots {
		if !podfacts.AtRevision(pod, v.s.UpdateRevision) {
			r.old++
		}
	}
	return r
}

func (r *revisionPicker) forNew(ord int) string {
	s := r.v.s
	us := s.Set.Spec.UpdateStrategy
	if us.Type == appsv1.OnDeleteStatefulSetStrategyType || us.RollingUpdate == nil {
		return s.UpdateRevision
	}
	partition := 0
	if us.RollingUpdate.Partition != nil {
		partition = int(*us.RollingUpdate.Partition)
	}
	if us.RollingUpdate.UnorderedUpdate != nil {
		if r.old < partition {
			r.old++
			return s.CurrentRevision
		}
		return s.UpdateRevision
	}
	if r.rank[ord] < partition {
		return s.CurrentRevision
	}
	return s.UpdateRevision
}

// refresh moves pods on once their in-place update is done, and out of
// PreparingNormal (see podlife).
func refresh(v *view) ([]podlife.Action, error) {
	var actions []podlife.Action
	for _, pod := range v.active {
		a, ok, err := v.life.RefreshInPlace(pod, v.s.UpdateRevision)
		if err != nil {
			return nil, err
		}
		if !ok {
			a = v.life.RefreshPreparingNormal(pod)
		}
		if a != nil {
			actions = append(actions, a)
		}
	}
	return actions, nil
}

// update moves pods to the update revision: the pods labelled
// specified-delete first, then the targets of the ordered or unordered
// update, while unavailable pods stay within maxUnavailable. A target
// already unavailable costs no budget.
func update(s Snapshot, v *view, p *Plan) ([]podlife.Action, error) {
	us := s.Set.Spec.UpdateStrategy
	ru := us.RollingUpdate
	if us.Type == appsv1.OnDeleteStatefulSetStrategyType || ru == nil {
		return nil, nil
	}
	if ru.Paused {
		if v.outdated() > 0 {
			p.Waiting, p.Blocked = "the rollout is paused", "Paused"
		}
		return nil, nil
	}
	replicas := int(workloadref.Replicas(s.Set.Spec.Replicas))
	budget := updateBudget(s.Set)
	unavailable := map[*corev1.Pod]bool{}
	for _, pod := range v.slots {
		if !v.available(pod) {
			unavailable[pod] = true
		}
	}
	// An ordinal with no pod (one the update deleted, not yet made again)
	// is down too; without it, an update whose replacements the scale
	// budget held back took more pods than maxUnavailable allows.
	missing := len(v.ords.Each()) - len(v.slots)
	down := func() int { return len(unavailable) + missing }
	var actions []podlife.Action
	for _, pod := range v.descending() {
		why := v.replaceWhy(pod)
		if why == "" || pod.DeletionTimestamp != nil {
			continue
		}
		if down() >= budget && !unavailable[pod] {
			continue
		}
		if a := v.deleteOrWait(pod, nil, why, true, p); a != nil {
			actions = append(actions, a)
		}
		unavailable[pod] = true
	}
	targets := v.targets(ru, replicas)
	// A pod held in PreparingUpdate that the update no longer includes
	// (the partition moved past it) goes back to Normal.
	for _, pod := range v.descending() {
		if podfacts.State(pod) == pub.LifecycleStatePreparingUpdate && !podfacts.AtRevision(pod, s.UpdateRevision) && !slices.Contains(targets, pod) {
			actions = append(actions, v.callOff(pod))
		}
	}
	if Monotonic(s.Set) {
		if len(actions) > 0 {
			return actions[:1], nil
		}
		// One ordinal at a time: a pod an update already took out is
		// finished before the next is touched (the refresh finishes one
		// at the update revision).
		for _, pod := range v.descending() {
			if updating(pod) {
				targets = nil
				if !podfacts.AtRevision(pod, s.UpdateRevision) && slices.Contains(v.targets(ru, replicas), pod) {
					targets = []*corev1.Pod{pod}
				}
				break
			}
		}
	}
	for _, pod := range targets {
		if podfacts.AtRevision(pod, s.UpdateRevision) {
			continue
		}
		if down() >= budget && !unavailable[pod] {
			// Only a rollout that cannot move this step waits.
			if p.Waiting == "" && len(actions) == 0 {
				p.Waiting = fmt.Sprintf("%d of maxUnavailable %d pods are unavailable", down(), budget)
			}
			break
		}
		unavailable[pod] = true
		if pod.DeletionTimestamp != nil {
			continue
		}
		a, err := v.updateOne(pod, ru, p)
		if err != nil {
			return actions, err
		}
		if a != nil {
			actions = append(actions, a)
		}
	}
	return actions, nil
}

// replaceWhy says why pod must be replaced whatever the partition, or "":
// it is labelled specified-delete, or it lacks the volume of one of the
// set's claim templates (one added since it was made). OpenKruise tries to
// add that volume to the running pod, which the API server forbids, and the
// set reports FailedUpdatePod for good (openkruise/kruise#1389, #2343); a
// new pod gets the volume and its claim.
func (v *view) replaceWhy(pod *corev1.Pod) string {
	if _, marked := pod.Labels[appsv1alpha1.SpecifiedDeleteKey]; marked {
		return "it was specified for deletion"
	}
	if vct := v.missingClaimVolume(pod); vct != "" {
		return fmt.Sprintf("it has no volume for claim template %s, added since it was made", vct)
	}
	return ""
}

// missingClaimVolume names the first claim template whose volume pod lacks
// (none with its name, or one not bound to its claim), or "".
func (v *view) missingClaimVolume(pod *corev1.Pod) string {
	ord, ok := Ordinal(v.s.Set.Name, pod.Name)
	if !ok {
		return ""
	}
	for _, vct := range v.s.Set.Spec.VolumeClaimTemplates {
		i := slices.IndexFunc(pod.Spec.Volumes, func(vol corev1.Volume) bool { return vol.Name == vct.Name })
		if i < 0 {
			return vct.Name
		}
		if c := pod.Spec.Volumes[i].PersistentVolumeClaim; c == nil || c.ClaimName != ClaimName(vct.Name, v.s.Set.Name, ord) {
			return vct.Name
		}
	}
	return ""
}

// callOff takes a pod held in PreparingUpdate for an update no longer
// wanted (the partition moved past it) back to Normal, its NotReady mark
// lifted and its handlers back, rather than leave it held for good
// (openkruise/kruise#1156, #1183). A pod already Updating or Updated
// finishes as it is.
func (v *view) callOff(pod *corev1.Pod) podlife.Action {
	return v.life.SetState(pod, podlife.Transition{To: pub.LifecycleStateNormal, LiftNotReady: pub.PodReadyKeyPreUpdateHook,
		Readd: v.life.Hook(podlife.InPlaceUpdateHook)}, "the update it was held for no longer includes it")
}

// updateOne updates a pod in place when the policy and the change allow,
// else recreates it through its preDelete hook.
func (v *view) updateOne(pod *corev1.Pod, ru *appsv1beta1.RollingUpdateStatefulSetStrategy, p *Plan) (podlife.Action, error) {
	s := v.s
	why := fmt.Sprintf("recreate for update to revision %s", s.UpdateRevision)
	if ru.PodUpdatePolicy == appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType || ru.PodUpdatePolicy == appsv1beta1.InPlaceOnlyPodUpdateStrategyType {
		from := s.Templates[revisionOf(pod, s.Templates)]
		change, ok := podlife.CanUpdateInPlace(from, s.Templates[s.UpdateRevision])
		if ok {
			u := podlife.InPlaceUpdate{Change: change, To: s.Templates[s.UpdateRevision], Revision: s.UpdateRevision, TakeBudget: s.Disruptions != nil}
			if ips := ru.InPlaceUpdateStrategy; ips != nil {
				u.GraceSeconds = ips.GracePeriodSeconds
			}
			return v.life.UpdateInPlaceStep(pod, u)
		}
		if ru.PodUpdatePolicy == appsv1beta1.InPlaceOnlyPodUpdateStrategyType {
			return nil, fmt.Errorf("find strategy is InPlaceOnly but Pod %s can not update in-place", pod.Name)
		}
		why += ": the change cannot be made in place"
	}
	return v.deleteOrWait(pod, nil, why, true, p), nil
}

// targets are the pods an update may move, in order. Ordered: from the
// highest ordinal down to partition, counted by place in the range
// (reserved ordinals included, as OpenKruise counts them), at most
// replicas - partition. Unordered: by priority, ties highest ordinal
// first, leaving partition pods at their revision whatever their ordinal.
func (v *view) targets(ru *appsv1beta1.RollingUpdateStatefulSetStrategy, replicas int) []*corev1.Pod {
	partition := 0
	if ru.Partition != nil {
		partition = int(*ru.Partition)
	}
	limit := replicas - partition
	if limit <= 0 {
		return nil
	}
	if ru.UnorderedUpdate == nil {
		var out []*corev1.Pod
		for slot := v.ords.End - v.ords.Start - 1; slot >= partition && len(out) < limit; slot-- {
			if pod := v.slots[v.ords.Start+slot]; pod != nil {
				out = append(out, pod)
			}
		}
		return out
	}
	var done, waiting []*corev1.Pod
	for _, pod := range v.descending() {
		if podfacts.AtRevision(pod, v.s.UpdateRevision) || pod.DeletionTimestamp != nil {
			done = append(done, pod)
		} else {
			waiting = append(waiting, pod)
		}
	}
	updatesort.ByPriority(waiting, ru.UnorderedUpdate.PriorityStrategy)
	out := append(done, waiting...)
	return out[:min(limit, len(out))]
}

// descending are the pods in range, highest ordinal first.
func (v *view) descending() []*corev1.Pod {
	ords := make([]int, 0, len(v.slots))
	for ord := range v.slots {
		ords = append(ords, ord)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ords)))
	out := make([]*corev1.Pod, len(ords))
	for i, ord := range ords {
		out[i] = v.slots[ord]
	}
	return out
}

// outdated counts the pods in range not at the update revision.
func (v *view) outdated() int {
	n := 0
	for _, pod := range v.slots {
		if !podfacts.AtRevision(pod, v.s.UpdateRevision) {
			n++
		}
	}
	return n
}

// revisionOf finds the name of the revision a pod is at among the known
// templates.
func revisionOf(pod *corev1.Pod, templates map[string]*corev1.PodTemplateSpec) string {
	for name := range templates {
		if podfacts.AtRevision(pod, name) {
			return name
		}
	}
	return ""
}
