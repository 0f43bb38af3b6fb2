package conversion

import (
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// DaemonSetToHub converts a v1alpha1 Advanced DaemonSet to v1beta1 as
// OpenKruise does: Surging becomes Standard, the progressive-create-pod
// annotation "true" becomes scaleStrategy.partitionedScaling, and
// daemonSetHash becomes updateRevision. One repair: OpenKruise reads the
// annotation alone, so an annotation left behind turned partitionedScaling
// back on at every v1alpha1 write after a v1beta1 client had turned it off.
// Here the stash keeps the v1beta1 scaleStrategy for as long as the
// annotation is what it was when the object was read.
func DaemonSetToHub(src *appsv1alpha1.DaemonSet, dst *appsv1beta1.DaemonSet) error {
	in := src.DeepCopy()
	kept, err := takeStash(&in.ObjectMeta)
	if err != nil {
		return err
	}
	dst.ObjectMeta = in.ObjectMeta
	s := &in.Spec
	dst.Spec = appsv1beta1.DaemonSetSpec{
		Selector:             s.Selector,
		Template:             s.Template,
		UpdateStrategy:       appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.DaemonSetUpdateStrategyType(s.UpdateStrategy.Type)},
		MinReadySeconds:      s.MinReadySeconds,
		BurstReplicas:        s.BurstReplicas,
		RevisionHistoryLimit: s.RevisionHistoryLimit,
		Lifecycle:            s.Lifecycle,
		ScaleStrategy:        partitionedScalingOf(in.Annotations),
	}
	if r := s.UpdateStrategy.RollingUpdate; r != nil {
		t := appsv1beta1.RollingUpdateType(r.Type)
		if r.Type == appsv1alpha1.DeprecatedSurgingRollingUpdateType {
			t = appsv1beta1.StandardRollingUpdateType
		}
		dst.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateDaemonSet{
			Type: t, MaxUnavailable: r.MaxUnavailable, MaxSurge: r.MaxSurge,
			Selector: r.Selector, Partition: r.Partition, Paused: r.Paused,
		}
	}
	if k := kept.DaemonSet; k != nil && k.progressiveUnchanged(in.Annotations) {
		dst.Spec.ScaleStrategy = k.ScaleStrategy
	}
	st := &in.Status
	dst.Status = appsv1beta1.DaemonSetStatus{
		CurrentNumberScheduled: st.CurrentNumberScheduled,
		NumberMisscheduled:     st.NumberMisscheduled,
		DesiredNumberScheduled: st.DesiredNumberScheduled,
		NumberReady:            st.NumberReady,
		ObservedGeneration:     st.ObservedGeneration,
		UpdatedNumberScheduled: st.UpdatedNumberScheduled,
		NumberAvailable:        st.NumberAvailable,
		NumberUnavailable:      st.NumberUnavailable,
		CollisionCount:         st.CollisionCount,
		Conditions:             st.Conditions,
		UpdateRevision:         st.DaemonSetHash,
	}
	return nil
}

// DaemonSetFromHub converts a v1beta1 Advanced DaemonSet to v1alpha1 as
// OpenKruise does (partitionedScaling sets the annotation, which is never
// removed), stashing the scaleStrategy when the annotation would not give
// it back.
func DaemonSetFromHub(src *appsv1beta1.DaemonSet, dst *appsv1alpha1.DaemonSet) error {
	in := src.DeepCopy()
	meta := in.ObjectMeta
	s := &in.Spec
	dst.Spec = appsv1alpha1.DaemonSetSpec{
		Selector:             s.Selector,
		Template:             s.Template,
		UpdateStrategy:       appsv1alpha1.DaemonSetUpdateStrategy{Type: appsv1alpha1.DaemonSetUpdateStrategyType(s.UpdateStrategy.Type)},
		MinReadySeconds:      s.MinReadySeconds,
		BurstReplicas:        s.BurstReplicas,
		RevisionHistoryLimit: s.RevisionHistoryLimit,
		Lifecycle:            s.Lifecycle,
	}
	if r := s.UpdateStrategy.RollingUpdate; r != nil {
		dst.Spec.UpdateStrategy.RollingUpdate = &appsv1alpha1.RollingUpdateDaemonSet{
			Type: appsv1alpha1.RollingUpdateType(r.Type), MaxUnavailable: r.MaxUnavailable, MaxSurge: r.MaxSurge,
			Selector: r.Selector, Partition: r.Partition, Paused: r.Paused,
		}
	}
	if s.ScaleStrategy != nil && s.ScaleStrategy.PartitionedScaling {
		setAnnotation(&meta, appsv1alpha1.ProgressiveCreatePodAnnotation, "true")
	}
	var kept stash
	if !sameScaleStrategy(partitionedScalingOf(meta.Annotations), s.ScaleStrategy) {
		k := &daemonSetStash{ScaleStrategy: s.ScaleStrategy}
		if v, ok := meta.Annotations[appsv1alpha1.ProgressiveCreatePodAnnotation]; ok {
			k.ProgressiveCreatePod = &v
		}
		kept.DaemonSet = k
	}
	if err := writeStash(&meta, kept); err != nil {
		return err
	}
	dst.ObjectMeta = meta
	st := &in.Status
	dst.Status = appsv1alpha1.DaemonSetStatus{
		CurrentNumberScheduled: st.CurrentNumberScheduled,
		NumberMisscheduled:     st.NumberMisscheduled,
		DesiredNumberScheduled: st.DesiredNumberScheduled,
		NumberReady:            st.NumberReady,
		ObservedGeneration:     st.ObservedGeneration,
		UpdatedNumberScheduled: st.UpdatedNumberScheduled,
		NumberAvailable:        st.NumberAvailable,
		NumberUnavailable:      st.NumberUnavailable,
		CollisionCount:         st.CollisionCount,
		Conditions:             st.Conditions,
		DaemonSetHash:          st.UpdateRevision,
	}
	return nil
}

// partitionedScalingOf is OpenKruise's reading of v1alpha1's annotation.
func partitionedScalingOf(annotations map[string]string) *appsv1beta1.DaemonSetScaleStrategy {
	if annotations[appsv1alpha1.ProgressiveCreatePodAnnotation] == "true" {
		return &appsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}
	}
	return nil
}

func sameScaleStrategy(a, b *appsv1beta1.DaemonSetScaleStrategy) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func init() {
	register(DaemonSet, &appsv1alpha1.DaemonSet{}, &appsv1beta1.DaemonSet{}, &appsv1alpha1.DaemonSetList{}, &appsv1beta1.DaemonSetList{}, DaemonSetToHub, DaemonSetFromHub)
}
