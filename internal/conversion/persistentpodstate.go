package conversion

import (
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// PersistentPodStateToHub converts a v1alpha1 PersistentPodState to v1beta1:
// only NodeTopologyTerm's nodeTopologyKeys, renamed keys, differs.
func PersistentPodStateToHub(src *appsv1alpha1.PersistentPodState, dst *appsv1beta1.PersistentPodState) error {
	in := src.DeepCopy()
	s := in.Spec
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = appsv1beta1.PersistentPodStateSpec{
		TargetReference:                   appsv1beta1.TargetReference(s.TargetReference),
		PersistentPodStateRetentionPolicy: appsv1beta1.PersistentPodStateRetentionPolicyType(s.PersistentPodStateRetentionPolicy),
	}
	for _, a := range s.PersistentPodAnnotations {
		dst.Spec.PersistentPodAnnotations = append(dst.Spec.PersistentPodAnnotations, appsv1beta1.PersistentPodAnnotation(a))
	}
	if t := s.RequiredPersistentTopology; t != nil {
		dst.Spec.RequiredPersistentTopology = &appsv1beta1.NodeTopologyTerm{Keys: t.NodeTopologyKeys}
	}
	for _, t := range s.PreferredPersistentTopology {
		dst.Spec.PreferredPersistentTopology = append(dst.Spec.PreferredPersistentTopology, appsv1beta1.PreferredTopologyTerm{
			Weight: t.Weight, Preference: appsv1beta1.NodeTopologyTerm{Keys: t.Preference.NodeTopologyKeys},
		})
	}
	dst.Status = appsv1beta1.PersistentPodStateStatus{ObservedGeneration: in.Status.ObservedGeneration, Conditions: in.Status.Conditions}
	if len(in.Status.PodStates) > 0 {
		dst.Status.PodStates = make(map[string]appsv1beta1.PodState, len(in.Status.PodStates))
		for name, state := range in.Status.PodStates {
			dst.Status.PodStates[name] = appsv1beta1.PodState(state)
		}
	}
	return nil
}

// PersistentPodStateFromHub converts a v1beta1 PersistentPodState to v1alpha1.
func PersistentPodStateFromHub(src *appsv1beta1.PersistentPodState, dst *appsv1alpha1.PersistentPodState) error {
	in := src.DeepCopy()
	s := in.Spec
	dst.ObjectMeta = in.ObjectMeta
	dst.Spec = appsv1alpha1.PersistentPodStateSpec{
		TargetReference:                   appsv1alpha1.TargetReference(s.TargetReference),
		PersistentPodStateRetentionPolicy: appsv1alpha1.PersistentPodStateRetentionPolicyType(s.PersistentPodStateRetentionPolicy),
	}
	for _, a := range s.PersistentPodAnnotations {
		dst.Spec.PersistentPodAnnotations = append(dst.Spec.PersistentPodAnnotations, appsv1alpha1.PersistentPodAnnotation(a))
	}
	if t := s.RequiredPersistentTopology; t != nil {
		dst.Spec.RequiredPersistentTopology = &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: t.Keys}
	}
	for _, t := range s.PreferredPersistentTopology {
		dst.Spec.PreferredPersistentTopology = append(dst.Spec.PreferredPersistentTopology, appsv1alpha1.PreferredTopologyTerm{
			Weight: t.Weight, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: t.Preference.Keys},
		})
	}
	dst.Status = appsv1alpha1.PersistentPodStateStatus{ObservedGeneration: in.Status.ObservedGeneration, Conditions: in.Status.Conditions}
	if len(in.Status.PodStates) > 0 {
		dst.Status.PodStates = make(map[string]appsv1alpha1.PodState, len(in.Status.PodStates))
		for name, state := range in.Status.PodStates {
			dst.Status.PodStates[name] = appsv1alpha1.PodState(state)
		}
	}
	return nil
}

func init() {
	register(PersistentPodState, &appsv1alpha1.PersistentPodState{}, &appsv1beta1.PersistentPodState{}, &appsv1alpha1.PersistentPodStateList{}, &appsv1beta1.PersistentPodStateList{}, PersistentPodStateToHub, PersistentPodStateFromHub)
}
