package planner

import (
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Status is the set's status from its pods, as OpenKruise computes it:
// replicas counts every pod with a phase (terminating ones too), ready
// the running Ready ones, available the Normal ones Ready for
// minReadySeconds, current and updated the live ones by revision. The
// current revision moves to the update revision once every pod is updated
// and Ready. collisionCount and the label selector are the caller's.
func Status(s Snapshot, collisionCount *int32, selector string) appsv1beta1.StatefulSetStatus {
	set := s.Set
	st := appsv1beta1.StatefulSetStatus{
		ObservedGeneration: set.Generation, CollisionCount: collisionCount, LabelSelector: selector,
		CurrentRevision: s.CurrentRevision, UpdateRevision: s.UpdateRevision,
	}
	minReady := MinReadySeconds(set)
	for _, pod := range s.Pods {
		if _, ok := Ordinal(set.Name, pod.Name); !ok || pod.Status.Phase == "" {
			continue
		}
		st.Replicas++
		ready := pod.Status.Phase == corev1.PodRunning && podfacts.HasReadyCondition(pod)
		available := podfacts.IsAvailable(pod, minReady, s.Now)
		updated := podfacts.AtRevision(pod, s.UpdateRevision)
		if ready {
			st.ReadyReplicas++
		}
		if available {
			st.AvailableReplicas++
		}
		if pod.DeletionTimestamp != nil {
			continue
		}
		if podfacts.AtRevision(pod, s.CurrentRevision) {
			st.CurrentReplicas++
		}
		if updated {
			st.UpdatedReplicas++
			if ready {
				st.UpdatedReadyReplicas++
			}
			if available {
				st.UpdatedAvailableReplicas++
			}
		}
	}
	if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType &&
		st.UpdatedReplicas == st.Replicas && st.ReadyReplicas == st.Replicas {
		st.CurrentRevision, st.CurrentReplicas = st.UpdateRevision, st.UpdatedReplicas
	}
	st.VolumeClaims = claimStatus(s)
	return st
}

// WithCreated is the snapshot with the pods the plan's creations make
// (Pending, at their revisions), so the status of a step counts them as
// OpenKruise's and Kubernetes' do once made: one status write per created
// pod, not one for the step and another once the cache shows the pod.
func (s Snapshot) WithCreated(actions []podlife.Action) Snapshot {
	pods := s.Pods
	for _, a := range actions {
		c, ok := a.(podlife.CreatePod)
		if !ok {
			continue
		}
		if ord, err := strconv.Atoi(c.InstanceID); err == nil {
			pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}
			pod.Name, pod.Labels = PodName(s.Set.Name, ord), map[string]string{appsv1.ControllerRevisionHashLabelKey: c.Revision}
			pods = append(slices.Clip(pods), pod)
		}
	}
	s.Pods = pods
	return s
}

// claimStatus counts, per claim template, the pods in range whose claim
// asks for at least the template's storage (compatible), and whose
// capacity has it too (compatible and ready).
func claimStatus(s Snapshot) []appsv1beta1.VolumeClaimStatus {
	set := s.Set
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	ords := OrdinalsOf(set, s.StartOrdinal)
	var out []appsv1beta1.VolumeClaimStatus
	for _, vct := range set.Spec.VolumeClaimTemplates {
		want := vct.Spec.Resources.Requests[corev1.ResourceStorage]
		vs := appsv1beta1.VolumeClaimStatus{VolumeClaimName: vct.Name}
		for _, ord := range ords.Each() {
			c := s.Claims[ClaimName(vct.Name, set.Name, ord)]
			if c == nil || c.DeletionTimestamp != nil {
				continue
			}
			req := c.Spec.Resources.Requests[corev1.ResourceStorage]
			if req.Cmp(want) < 0 {
				continue
			}
			vs.CompatibleReplicas++
			capacity := c.Status.Capacity[corev1.ResourceStorage]
			if capacity.Cmp(want) >= 0 {
				vs.CompatibleReadyReplicas++
			}
		}
		out = append(out, vs)
	}
	return out
}
