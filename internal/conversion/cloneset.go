package conversion

import (
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// CloneSetToHub converts a v1alpha1 CloneSet to v1beta1.
func CloneSetToHub(src *appsv1alpha1.CloneSet, dst *appsv1beta1.CloneSet) error {
	in := src.DeepCopy()
	kept, err := takeStash(&in.ObjectMeta)
	if err != nil {
		return err
	}
	dst.ObjectMeta = in.ObjectMeta
	s := &in.Spec
	dst.Spec = appsv1beta1.CloneSetSpec{
		Replicas:                s.Replicas,
		Selector:                s.Selector,
		Template:                s.Template,
		VolumeClaimTemplates:    s.VolumeClaimTemplates,
		RevisionHistoryLimit:    s.RevisionHistoryLimit,
		MinReadySeconds:         s.MinReadySeconds,
		Lifecycle:               s.Lifecycle,
		ProgressDeadlineSeconds: s.ProgressDeadlineSeconds,
		ScaleStrategy: appsv1beta1.CloneSetScaleStrategy{
			PodsToDelete:   s.ScaleStrategy.PodsToDelete,
			MaxUnavailable: s.ScaleStrategy.MaxUnavailable,
			EnablePVCReuse: !s.ScaleStrategy.DisablePVCReuse,
			// The label says it in v1alpha1; OpenKruise reads it one way only.
			ExcludePreparingDelete: in.Labels[appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey] == "true" ||
				kept.ExcludePreparingDelete,
		},
		UpdateStrategy: updateStrategyToHub(s.UpdateStrategy, in.Annotations),
	}
	dst.Status = cloneSetStatusToHub(in.Status)
	return nil
}

// CloneSetFromHub converts a v1beta1 CloneSet to v1alpha1.
func CloneSetFromHub(src *appsv1beta1.CloneSet, dst *appsv1alpha1.CloneSet) error {
	in := src.DeepCopy()
	meta := in.ObjectMeta
	s := &in.Spec
	dst.Spec = appsv1alpha1.CloneSetSpec{
		Replicas:                s.Replicas,
		Selector:                s.Selector,
		Template:                s.Template,
		VolumeClaimTemplates:    s.VolumeClaimTemplates,
		RevisionHistoryLimit:    s.RevisionHistoryLimit,
		MinReadySeconds:         s.MinReadySeconds,
		Lifecycle:               s.Lifecycle,
		ProgressDeadlineSeconds: s.ProgressDeadlineSeconds,
		ScaleStrategy: appsv1alpha1.CloneSetScaleStrategy{
			PodsToDelete:    s.ScaleStrategy.PodsToDelete,
			MaxUnavailable:  s.ScaleStrategy.MaxUnavailable,
			DisablePVCReuse: !s.ScaleStrategy.EnablePVCReuse,
		},
	}
	dst.Spec.UpdateStrategy, meta.Annotations = updateStrategyFromHub(s.UpdateStrategy, meta.Annotations)
	var kept stash
	if s.ScaleStrategy.ExcludePreparingDelete && meta.Labels[appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey] != "true" {
		kept.ExcludePreparingDelete = true
	}
	if err := writeStash(&meta, kept); err != nil {
		return err
	}
	dst.ObjectMeta = meta
	dst.Status = cloneSetStatusFromHub(in.Status)
	return nil
}

// updateStrategyToHub splits v1alpha1's type into v1beta1's type and
// podUpdatePolicy. OnDelete keeps no rolling-update knob, as in OpenKruise.
func updateStrategyToHub(u appsv1alpha1.CloneSetUpdateStrategy, annotations map[string]string) appsv1beta1.CloneSetUpdateStrategy {
	var policy appsv1beta1.CloneSetPodUpdateStrategyType
	switch u.Type {
	case appsv1alpha1.OnDeleteCloneSetUpdateStrategyType:
		return appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.OnDeleteCloneSetUpdateStrategyType}
	case appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType:
		policy = appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType
	case appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType:
		policy = appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType
	default:
		policy = appsv1beta1.RecreateCloneSetPodUpdateStrategyType
	}
	return appsv1beta1.CloneSetUpdateStrategy{
		Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
		RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
			Partition:             u.Partition,
			MaxUnavailable:        u.MaxUnavailable,
			MaxSurge:              u.MaxSurge,
			PodUpdatePolicy:       policy,
			Paused:                u.Paused,
			PriorityStrategy:      u.PriorityStrategy,
			ScatterStrategy:       scatterToHub(u.ScatterStrategy),
			InPlaceUpdateStrategy: inPlaceToHub(u.InPlaceUpdateStrategy, annotations),
		},
	}
}

// updateStrategyFromHub joins type and podUpdatePolicy back into v1alpha1's
// type. The knobs are copied whenever rollingUpdate is set, OnDelete or not.
func updateStrategyFromHub(u appsv1beta1.CloneSetUpdateStrategy, annotations map[string]string) (appsv1alpha1.CloneSetUpdateStrategy, map[string]string) {
	out := appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.RecreateCloneSetUpdateStrategyType}
	r := u.RollingUpdate
	switch {
	case u.Type == appsv1beta1.OnDeleteCloneSetUpdateStrategyType:
		out.Type = appsv1alpha1.OnDeleteCloneSetUpdateStrategyType
	case r != nil && r.PodUpdatePolicy == appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType:
		out.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	case r != nil && r.PodUpdatePolicy == appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType:
		out.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	}
	if r == nil {
		return out, annotations
	}
	out.Partition = r.Partition
	out.MaxUnavailable = r.MaxUnavailable
	out.MaxSurge = r.MaxSurge
	out.Paused = r.Paused
	out.PriorityStrategy = r.PriorityStrategy
	out.ScatterStrategy = scatterFromHub(r.ScatterStrategy)
	out.InPlaceUpdateStrategy, annotations = inPlaceFromHub(r.InPlaceUpdateStrategy, annotations)
	return out, annotations
}

var imagePreDownloadKeys = []string{
	appsv1alpha1.ImagePreDownloadParallelismKey,
	appsv1alpha1.ImagePreDownloadTimeoutSecondsKey,
	appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods,
}

// inPlaceToHub moves the image pre-download annotations into the strategy.
// As in OpenKruise, a v1alpha1 strategy's own pre-download fields are not
// read (v1alpha1 says them with annotations) and a number that does not
// parse is left out.
func inPlaceToHub(src *pub.InPlaceUpdateStrategy, annotations map[string]string) *pub.InPlaceUpdateStrategy {
	annotated := false
	for _, key := range imagePreDownloadKeys {
		annotated = annotated || annotations[key] != ""
	}
	if src == nil && !annotated {
		return nil
	}
	out := &pub.InPlaceUpdateStrategy{}
	if src != nil {
		out.GracePeriodSeconds = src.GracePeriodSeconds
	}
	if v := annotations[appsv1alpha1.ImagePreDownloadParallelismKey]; v != "" {
		p := intstr.Parse(v)
		out.ImagePreDownloadParallelism = &p
	}
	out.ImagePreDownloadTimeoutSeconds = parseInt32(annotations[appsv1alpha1.ImagePreDownloadTimeoutSecondsKey])
	out.ImagePreDownloadMinUpdatedReadyPods = parseInt32(annotations[appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods])
	return out
}

// inPlaceFromHub writes the pre-download fields back as annotations. A
// strategy with nothing set becomes nil, as in OpenKruise.
func inPlaceFromHub(src *pub.InPlaceUpdateStrategy, annotations map[string]string) (*pub.InPlaceUpdateStrategy, map[string]string) {
	if src == nil || *src == (pub.InPlaceUpdateStrategy{}) {
		return nil, annotations
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	if p := src.ImagePreDownloadParallelism; p != nil {
		annotations[appsv1alpha1.ImagePreDownloadParallelismKey] = p.String()
	}
	if t := src.ImagePreDownloadTimeoutSeconds; t != nil {
		annotations[appsv1alpha1.ImagePreDownloadTimeoutSecondsKey] = strconv.Itoa(int(*t))
	}
	if m := src.ImagePreDownloadMinUpdatedReadyPods; m != nil {
		annotations[appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods] = strconv.Itoa(int(*m))
	}
	return &pub.InPlaceUpdateStrategy{GracePeriodSeconds: src.GracePeriodSeconds}, annotations
}

func parseInt32(s string) *int32 {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return nil
	}
	n := int32(v)
	return &n
}

func scatterToHub(in appsv1alpha1.UpdateScatterStrategy) appsv1beta1.UpdateScatterStrategy {
	if in == nil {
		return nil
	}
	out := make(appsv1beta1.UpdateScatterStrategy, len(in))
	for i, t := range in {
		out[i] = appsv1beta1.UpdateScatterTerm(t)
	}
	return out
}

func scatterFromHub(in appsv1beta1.UpdateScatterStrategy) appsv1alpha1.UpdateScatterStrategy {
	if in == nil {
		return nil
	}
	out := make(appsv1alpha1.UpdateScatterStrategy, len(in))
	for i, t := range in {
		out[i] = appsv1alpha1.UpdateScatterTerm(t)
	}
	return out
}

func cloneSetStatusToHub(in appsv1alpha1.CloneSetStatus) appsv1beta1.CloneSetStatus {
	out := appsv1beta1.CloneSetStatus{
		ObservedGeneration: in.ObservedGeneration, Replicas: in.Replicas, ReadyReplicas: in.ReadyReplicas,
		AvailableReplicas: in.AvailableReplicas, UpdatedReplicas: in.UpdatedReplicas,
		UpdatedReadyReplicas: in.UpdatedReadyReplicas, UpdatedAvailableReplicas: in.UpdatedAvailableReplicas,
		ExpectedUpdatedReplicas: in.ExpectedUpdatedReplicas, UpdateRevision: in.UpdateRevision,
		CurrentRevision: in.CurrentRevision, CollisionCount: in.CollisionCount, LabelSelector: in.LabelSelector,
	}
	if in.Conditions != nil {
		out.Conditions = make([]appsv1beta1.CloneSetCondition, len(in.Conditions))
		for i, c := range in.Conditions {
			out.Conditions[i] = appsv1beta1.CloneSetCondition{Type: appsv1beta1.CloneSetConditionType(c.Type), Status: c.Status,
				LastUpdateTime: c.LastUpdateTime, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
		}
	}
	return out
}

func cloneSetStatusFromHub(in appsv1beta1.CloneSetStatus) appsv1alpha1.CloneSetStatus {
	out := appsv1alpha1.CloneSetStatus{
		ObservedGeneration: in.ObservedGeneration, Replicas: in.Replicas, ReadyReplicas: in.ReadyReplicas,
		AvailableReplicas: in.AvailableReplicas, UpdatedReplicas: in.UpdatedReplicas,
		UpdatedReadyReplicas: in.UpdatedReadyReplicas, UpdatedAvailableReplicas: in.UpdatedAvailableReplicas,
		ExpectedUpdatedReplicas: in.ExpectedUpdatedReplicas, UpdateRevision: in.UpdateRevision,
		CurrentRevision: in.CurrentRevision, CollisionCount: in.CollisionCount, LabelSelector: in.LabelSelector,
	}
	if in.Conditions != nil {
		out.Conditions = make([]appsv1alpha1.CloneSetCondition, len(in.Conditions))
		for i, c := range in.Conditions {
			out.Conditions[i] = appsv1alpha1.CloneSetCondition{Type: appsv1alpha1.CloneSetConditionType(c.Type), Status: c.Status,
				LastUpdateTime: c.LastUpdateTime, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
		}
	}
	return out
}

func init() {
	register(CloneSet, &appsv1alpha1.CloneSet{}, &appsv1beta1.CloneSet{}, &appsv1alpha1.CloneSetList{}, &appsv1beta1.CloneSetList{}, CloneSetToHub, CloneSetFromHub)
}
