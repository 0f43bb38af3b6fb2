package workloadspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	corehelper "k8s.io/kubernetes/pkg/apis/core/helper"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// ValidateTemplate validates a workload's pod template as Kubernetes
// validates a pod template, with each volumeClaimTemplate added as a
// volume: a template volume of the same name is a duplicate, and mounts may
// name the claims. old is the stored template on an update, nil on a
// create. kind names the workload in OpenKruise's activeDeadlineSeconds
// message ("cloneset", "StatefulSet").
func ValidateTemplate(tmpl *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim, old *corev1.PodTemplateSpec, kind string, path *field.Path) field.ErrorList {
	withClaims := tmpl.DeepCopy()
	for _, vct := range claims {
		withClaims.Spec.Volumes = append(withClaims.Spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: vct.Name},
		}})
	}
	internal := &core.PodTemplateSpec{}
	if err := corev1conversion.Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec(withClaims, internal, nil); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath(""), *tmpl, fmt.Sprintf("Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec failed: %v", err))}
	}
	var oldInternal *core.PodTemplateSpec
	if old != nil {
		oldInternal = &core.PodTemplateSpec{}
		if err := corev1conversion.Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec(old, oldInternal, nil); err != nil {
			oldInternal = nil
		}
	}
	errs := corevalidation.ValidatePodTemplateSpec(internal, path, podutil.GetValidationOptionsFromPodTemplate(internal, oldInternal))
	if rp := tmpl.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(path.Child("spec", "restartPolicy"), rp, []string{string(corev1.RestartPolicyAlways)}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(path.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// PriorityError is the first problem of an update priority strategy, in
// OpenKruise's words. A weight of 0 is accepted, as in OpenKruise.
func PriorityError(ps *pub.UpdatePriorityStrategy) string {
	if ps == nil {
		return ""
	}
	if len(ps.WeightPriority) > 0 && len(ps.OrderPriority) > 0 {
		return "only one of weightPriority and orderPriority can be used"
	}
	for _, w := range ps.WeightPriority {
		if w.Weight < 0 || w.Weight > 100 {
			return "weight must be valid number in the range 1-100"
		}
		if len(w.MatchSelector.MatchLabels)+len(w.MatchSelector.MatchExpressions) == 0 {
			return "selector can not be empty"
		}
		if _, err := metav1.LabelSelectorAsSelector(&w.MatchSelector); err != nil {
			return fmt.Sprintf("invalid selector %v", err)
		}
	}
	for _, o := range ps.OrderPriority {
		if o.OrderedKey == "" {
			return "order key can not be empty"
		}
	}
	return ""
}

// ValidateLifecycle checks the hooks' handlers as the API server would check
// them on a pod: a label or finalizer the pod could never carry would hold
// it forever. OpenKruise accepts them; we refuse them with their field path.
func ValidateLifecycle(l *pub.Lifecycle, path *field.Path) field.ErrorList {
	if l == nil {
		return nil
	}
	var errs field.ErrorList
	for _, h := range []struct {
		name string
		hook *pub.LifecycleHook
	}{{"preDelete", l.PreDelete}, {"inPlaceUpdate", l.InPlaceUpdate}, {"preNormal", l.PreNormal}} {
		if h.hook == nil {
			continue
		}
		hookPath := path.Child(h.name)
		errs = append(errs, metav1validation.ValidateLabels(h.hook.LabelsHandler, hookPath.Child("labelsHandler"))...)
		for i, f := range h.hook.FinalizersHandler {
			errs = append(errs, validateFinalizerName(f, hookPath.Child("finalizersHandler").Index(i))...)
		}
	}
	return errs
}

// validateFinalizerName is the API server's rule for a pod's finalizers: a
// qualified name, with a domain unless it is a standard one.
func validateFinalizerName(name string, path *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateFinalizerName(name, path)
	if !strings.Contains(name, "/") && !corehelper.IsStandardFinalizerName(name) {
		errs = append(errs, field.Invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified"))
	}
	return errs
}
