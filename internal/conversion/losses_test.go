package conversion

import (
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// The canonical* functions are the list of what a round trip loses, each
// rule one loss of OpenKruise's conversion that Lifeline keeps for
// compatibility (docs/compatibility.md lists them for users). Each is
// idempotent and is applied to both the original and the round-tripped
// object.

// canonicalAlphaCloneSet: v1alpha1 → v1beta1 → v1alpha1.
func canonicalAlphaCloneSet(o runtime.Object) {
	cs := o.(*appsv1alpha1.CloneSet)
	u := &cs.Spec.UpdateStrategy
	switch u.Type {
	case appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType:
	case appsv1alpha1.OnDeleteCloneSetUpdateStrategyType:
		// 1. OnDelete keeps no rolling-update knob.
		*u = appsv1alpha1.CloneSetUpdateStrategy{Type: u.Type}
	default:
		// 2. An empty or unknown type is ReCreate.
		u.Type = appsv1alpha1.RecreateCloneSetUpdateStrategyType
	}
	if s := u.InPlaceUpdateStrategy; s != nil {
		// 3. The strategy's own pre-download fields are not read (v1alpha1
		// says them with annotations), and an empty strategy is nil.
		u.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: s.GracePeriodSeconds}
		if s.GracePeriodSeconds == 0 {
			u.InPlaceUpdateStrategy = nil
		}
	}
	// 4. Pre-download annotations are rewritten in canonical form ("007"
	// becomes "7") when they parse; then they are what the fields hold.
	canonicalPreDownloadAnnotations(cs.Annotations)
}

// canonicalBetaCloneSet: v1beta1 → v1alpha1 → v1beta1.
func canonicalBetaCloneSet(o runtime.Object) {
	cs := o.(*appsv1beta1.CloneSet)
	u := &cs.Spec.UpdateStrategy
	if u.Type == appsv1beta1.OnDeleteCloneSetUpdateStrategyType {
		// 1. OnDelete keeps no rolling-update knob.
		u.RollingUpdate = nil
	} else {
		// 2. An empty or unknown type is RollingUpdate, an empty or unknown
		// podUpdatePolicy ReCreate.
		u.Type = appsv1beta1.RollingUpdateCloneSetUpdateStrategyType
		if u.RollingUpdate == nil {
			u.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{}
		}
		switch u.RollingUpdate.PodUpdatePolicy {
		case appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType, appsv1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType:
		default:
			u.RollingUpdate.PodUpdatePolicy = appsv1beta1.RecreateCloneSetPodUpdateStrategyType
		}
		u.RollingUpdate.InPlaceUpdateStrategy = canonicalBetaInPlace(u.RollingUpdate.InPlaceUpdateStrategy, cs.Annotations)
	}
	// 4. The pre-download annotations, being v1alpha1's spelling of the
	// fields, are dropped once the fields hold them.
	for _, key := range imagePreDownloadKeys {
		delete(cs.Annotations, key)
	}
	// 5. The v1alpha1 label sets excludePreparingDelete.
	if cs.Labels[appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey] == "true" {
		cs.Spec.ScaleStrategy.ExcludePreparingDelete = true
	}
}

// canonicalBetaInPlace: 3. pre-download annotations that a v1beta1 object
// carries fill the fields they name that are unset (v1alpha1 has only the
// annotations), a numeric string parallelism becomes a number, and a
// strategy with nothing set is nil.
func canonicalBetaInPlace(s *pub.InPlaceUpdateStrategy, annotations map[string]string) *pub.InPlaceUpdateStrategy {
	out := pub.InPlaceUpdateStrategy{}
	if s != nil {
		out = *s
	}
	if out.ImagePreDownloadParallelism == nil {
		if v := annotations[appsv1alpha1.ImagePreDownloadParallelismKey]; v != "" {
			p := intstr.Parse(v)
			out.ImagePreDownloadParallelism = &p
		}
	} else {
		p := intstr.Parse(out.ImagePreDownloadParallelism.String())
		out.ImagePreDownloadParallelism = &p
	}
	if out.ImagePreDownloadTimeoutSeconds == nil {
		out.ImagePreDownloadTimeoutSeconds = parseInt32(annotations[appsv1alpha1.ImagePreDownloadTimeoutSecondsKey])
	}
	if out.ImagePreDownloadMinUpdatedReadyPods == nil {
		out.ImagePreDownloadMinUpdatedReadyPods = parseInt32(annotations[appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods])
	}
	if out == (pub.InPlaceUpdateStrategy{}) {
		return nil
	}
	return &out
}

func canonicalPreDownloadAnnotations(annotations map[string]string) {
	if v := annotations[appsv1alpha1.ImagePreDownloadParallelismKey]; v != "" {
		p := intstr.Parse(v)
		annotations[appsv1alpha1.ImagePreDownloadParallelismKey] = p.String()
	}
	for _, key := range imagePreDownloadKeys[1:] {
		if n := parseInt32(annotations[key]); n != nil {
			annotations[key] = strconv.Itoa(int(*n))
		}
	}
}

// canonicalAlphaBudget: v1alpha1 → v1beta1 → v1alpha1. 1. The
// protect-operations list is rewritten trimmed, without empty items, and
// removed when it names none; protect-total-replicas is rewritten as a
// plain number.
func canonicalAlphaBudget(o runtime.Object) {
	b := o.(*policyv1alpha1.PodUnavailableBudget)
	if v, ok := b.Annotations[policyv1alpha1.PubProtectOperationAnnotation]; ok {
		ops, _ := parseOperations(v)
		b.Annotations[policyv1alpha1.PubProtectOperationAnnotation] = joinOperations(ops)
		if len(ops) == 0 {
			delete(b.Annotations, policyv1alpha1.PubProtectOperationAnnotation)
		}
	}
	if n := parseInt32(b.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]); n != nil {
		b.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation] = strconv.Itoa(int(*n))
	}
}

// canonicalBetaBudget: v1beta1 → v1alpha1 → v1beta1. 1. The
// protect-operations and protect-total-replicas annotations, v1alpha1's
// spelling of the fields, are rewritten from the fields when these are
// set; 2. when a field is unset, an annotation that parses sets it (what
// OpenKruise's controller reads it as), and stays.
func canonicalBetaBudget(o runtime.Object) {
	b := o.(*policyv1beta1.PodUnavailableBudget)
	if len(b.Spec.ProtectOperations) == 0 {
		if ops, err := parseOperations(b.Annotations[policyv1alpha1.PubProtectOperationAnnotation]); err == nil {
			b.Spec.ProtectOperations = ops
		}
	}
	if b.Spec.ProtectTotalReplicas == nil {
		b.Spec.ProtectTotalReplicas = parseInt32(b.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation])
	}
	delete(b.Annotations, policyv1alpha1.PubProtectOperationAnnotation)
	delete(b.Annotations, policyv1alpha1.PubProtectTotalReplicasAnnotation)
	if len(b.Annotations) == 0 {
		b.Annotations = nil
	}
}

// canonicalBetaStatefulSet: v1beta1 → v1alpha1 → v1beta1. Only the status
// fields v1alpha1 lacks are lost, as in OpenKruise; the spec fields it
// lacks are kept (OpenKruise erases them, #2102).
func canonicalBetaStatefulSet(o runtime.Object) {
	st := &o.(*appsv1beta1.StatefulSet).Status
	st.UpdatedReadyReplicas, st.UpdatedAvailableReplicas, st.VolumeClaims = 0, 0, nil
}

// canonicalAlphaDaemonSet: v1alpha1 → v1beta1 → v1alpha1. The deprecated
// Surging type is stored as Standard, as in OpenKruise.
func canonicalAlphaDaemonSet(o runtime.Object) {
	if r := o.(*appsv1alpha1.DaemonSet).Spec.UpdateStrategy.RollingUpdate; r != nil && r.Type == appsv1alpha1.DeprecatedSurgingRollingUpdateType {
		r.Type = appsv1alpha1.StandardRollingUpdateType
	}
}

// canonicalBetaDaemonSet: v1beta1 → v1alpha1 → v1beta1. partitionedScaling
// is said in v1alpha1 by the progressive-create-pod annotation, which stays
// on the object, as in OpenKruise. (The scaleStrategy itself is kept, also
// when the annotation disagrees with it; OpenKruise's turns back on.)
func canonicalBetaDaemonSet(o runtime.Object) {
	ds := o.(*appsv1beta1.DaemonSet)
	if s := ds.Spec.ScaleStrategy; s != nil && s.PartitionedScaling {
		if ds.Annotations == nil {
			ds.Annotations = map[string]string{}
		}
		ds.Annotations[appsv1alpha1.ProgressiveCreatePodAnnotation] = "true"
	}
}
