package conversion

import (
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// StatefulSetToHub converts a v1alpha1 Advanced StatefulSet to v1beta1: a
// field copy, as OpenKruise's, plus the v1beta1-only fields the stash kept.
// OpenKruise leaves them zero, so a v1alpha1 write (an editor's
// read-modify-write) erased reserveOrdinals and deleted the wrong pods
// (openkruise/kruise#2102); here they come back.
func StatefulSetToHub(src *appsv1alpha1.StatefulSet, dst *appsv1beta1.StatefulSet) error {
	in := src.DeepCopy()
	kept, err := takeStash(&in.ObjectMeta)
	if err != nil {
		return err
	}
	dst.ObjectMeta = in.ObjectMeta
	s := &in.Spec
	dst.Spec = appsv1beta1.StatefulSetSpec{
		Replicas:             s.Replicas,
		Selector:             s.Selector,
		Template:             s.Template,
		VolumeClaimTemplates: s.VolumeClaimTemplates,
		ServiceName:          s.ServiceName,
		PodManagementPolicy:  s.PodManagementPolicy,
		UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
			Type:          s.UpdateStrategy.Type,
			RollingUpdate: rollingUpdateToHub(s.UpdateStrategy.RollingUpdate),
		},
		RevisionHistoryLimit: s.RevisionHistoryLimit,
	}
	if k := kept.StatefulSet; k != nil {
		dst.Spec.VolumeClaimUpdateStrategy = k.VolumeClaimUpdateStrategy
		dst.Spec.ReserveOrdinals = k.ReserveOrdinals
		dst.Spec.Lifecycle = k.Lifecycle
		dst.Spec.ScaleStrategy = k.ScaleStrategy
		dst.Spec.PersistentVolumeClaimRetentionPolicy = k.PersistentVolumeClaimRetentionPolicy
		dst.Spec.Ordinals = k.Ordinals
	}
	st := &in.Status
	dst.Status = appsv1beta1.StatefulSetStatus{
		ObservedGeneration: st.ObservedGeneration,
		Replicas:           st.Replicas,
		ReadyReplicas:      st.ReadyReplicas,
		AvailableReplicas:  st.AvailableReplicas,
		CurrentReplicas:    st.CurrentReplicas,
		UpdatedReplicas:    st.UpdatedReplicas,
		CurrentRevision:    st.CurrentRevision,
		UpdateRevision:     st.UpdateRevision,
		CollisionCount:     st.CollisionCount,
		Conditions:         st.Conditions,
		LabelSelector:      st.LabelSelector,
	}
	return nil
}

// StatefulSetFromHub converts a v1beta1 Advanced StatefulSet to v1alpha1,
// stashing the spec fields v1alpha1 has no place for. The status fields
// only v1beta1 has (updatedReadyReplicas, updatedAvailableReplicas,
// volumeClaims) are dropped as OpenKruise drops them: only the controller
// writes status, and it writes v1beta1.
func StatefulSetFromHub(src *appsv1beta1.StatefulSet, dst *appsv1alpha1.StatefulSet) error {
	in := src.DeepCopy()
	meta := in.ObjectMeta
	s := &in.Spec
	dst.Spec = appsv1alpha1.StatefulSetSpec{
		Replicas:             s.Replicas,
		Selector:             s.Selector,
		Template:             s.Template,
		VolumeClaimTemplates: s.VolumeClaimTemplates,
		ServiceName:          s.ServiceName,
		PodManagementPolicy:  s.PodManagementPolicy,
		UpdateStrategy: appsv1alpha1.StatefulSetUpdateStrategy{
			Type:          s.UpdateStrategy.Type,
			RollingUpdate: rollingUpdateFromHub(s.UpdateStrategy.RollingUpdate),
		},
		RevisionHistoryLimit: s.RevisionHistoryLimit,
	}
	k := &statefulSetStash{
		VolumeClaimUpdateStrategy:            s.VolumeClaimUpdateStrategy,
		ReserveOrdinals:                      s.ReserveOrdinals,
		Lifecycle:                            s.Lifecycle,
		ScaleStrategy:                        s.ScaleStrategy,
		PersistentVolumeClaimRetentionPolicy: s.PersistentVolumeClaimRetentionPolicy,
		Ordinals:                             s.Ordinals,
	}
	var kept stash
	if !k.empty() {
		kept.StatefulSet = k
	}
	if err := writeStash(&meta, kept); err != nil {
		return err
	}
	dst.ObjectMeta = meta
	st := &in.Status
	dst.Status = appsv1alpha1.StatefulSetStatus{
		ObservedGeneration: st.ObservedGeneration,
		Replicas:           st.Replicas,
		ReadyReplicas:      st.ReadyReplicas,
		AvailableReplicas:  st.AvailableReplicas,
		CurrentReplicas:    st.CurrentReplicas,
		UpdatedReplicas:    st.UpdatedReplicas,
		CurrentRevision:    st.CurrentRevision,
		UpdateRevision:     st.UpdateRevision,
		CollisionCount:     st.CollisionCount,
		Conditions:         st.Conditions,
		LabelSelector:      st.LabelSelector,
	}
	return nil
}

func rollingUpdateToHub(r *appsv1alpha1.RollingUpdateStatefulSetStrategy) *appsv1beta1.RollingUpdateStatefulSetStrategy {
	if r == nil {
		return nil
	}
	out := &appsv1beta1.RollingUpdateStatefulSetStrategy{
		Partition:             r.Partition,
		MaxUnavailable:        r.MaxUnavailable,
		PodUpdatePolicy:       appsv1beta1.PodUpdateStrategyType(r.PodUpdatePolicy),
		Paused:                r.Paused,
		InPlaceUpdateStrategy: r.InPlaceUpdateStrategy,
		MinReadySeconds:       r.MinReadySeconds,
	}
	if r.UnorderedUpdate != nil {
		out.UnorderedUpdate = &appsv1beta1.UnorderedUpdateStrategy{PriorityStrategy: r.UnorderedUpdate.PriorityStrategy}
	}
	return out
}

func rollingUpdateFromHub(r *appsv1beta1.RollingUpdateStatefulSetStrategy) *appsv1alpha1.RollingUpdateStatefulSetStrategy {
	if r == nil {
		return nil
	}
	out := &appsv1alpha1.RollingUpdateStatefulSetStrategy{
		Partition:             r.Partition,
		MaxUnavailable:        r.MaxUnavailable,
		PodUpdatePolicy:       appsv1alpha1.PodUpdateStrategyType(r.PodUpdatePolicy),
		Paused:                r.Paused,
		InPlaceUpdateStrategy: r.InPlaceUpdateStrategy,
		MinReadySeconds:       r.MinReadySeconds,
	}
	if r.UnorderedUpdate != nil {
		out.UnorderedUpdate = &appsv1alpha1.UnorderedUpdateStrategy{PriorityStrategy: r.UnorderedUpdate.PriorityStrategy}
	}
	return out
}

func init() {
	register(StatefulSet, &appsv1alpha1.StatefulSet{}, &appsv1beta1.StatefulSet{}, &appsv1alpha1.StatefulSetList{}, &appsv1beta1.StatefulSetList{}, StatefulSetToHub, StatefulSetFromHub)
}
