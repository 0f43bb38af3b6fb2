package webhook

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/workloadspec"
)

// ValidateCreate checks a new set (defaults already filled in).
func ValidateCreate(sts *appsv1beta1.StatefulSet) field.ErrorList {
	errs := corevalidation.ValidateObjectMeta(&sts.ObjectMeta, true, appsvalidation.ValidateStatefulSetName, field.NewPath("metadata"))
	return append(errs, validateSpec(&sts.Spec, nil, field.NewPath("spec"))...)
}

// ValidateUpdate checks a change to a set. The selector, serviceName and
// podManagementPolicy cannot change; with InPlaceOnly, the pod spec may
// change only in its containers' images.
func ValidateUpdate(sts, old *appsv1beta1.StatefulSet) field.ErrorList {
	errs := corevalidation.ValidateObjectMetaUpdate(&sts.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateSpec(&sts.Spec, &old.Spec.Template, field.NewPath("spec"))...)
	frozen := old.Spec.DeepCopy()
	s := &sts.Spec
	frozen.Replicas, frozen.Template, frozen.UpdateStrategy = s.Replicas, s.Template, s.UpdateStrategy
	frozen.PersistentVolumeClaimRetentionPolicy, frozen.ScaleStrategy = s.PersistentVolumeClaimRetentionPolicy, s.ScaleStrategy
	frozen.VolumeClaimTemplates, frozen.VolumeClaimUpdateStrategy, frozen.ReserveOrdinals = s.VolumeClaimTemplates, s.VolumeClaimUpdateStrategy, s.ReserveOrdinals
	frozen.Lifecycle, frozen.RevisionHistoryLimit, frozen.Ordinals = s.Lifecycle, s.RevisionHistoryLimit, s.Ordinals
	if !apiequality.Semantic.DeepEqual(*frozen, *s) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'reserveOrdinals', 'lifecycle', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy', `volumeClaimTemplates`, `VolumeClaimUpdateStrategy` and 'updateStrategy' are forbidden"))
	}
	if ru := s.UpdateStrategy.RollingUpdate; ru != nil && ru.PodUpdatePolicy == appsv1beta1.InPlaceOnlyPodUpdateStrategyType {
		errs = append(errs, validateInPlaceOnly(&old.Spec.Template, &s.Template)...)
	}
	return errs
}

func validateSpec(spec *appsv1beta1.StatefulSetSpec, oldTemplate *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	errs := validatePodManagementPolicy(spec.PodManagementPolicy, path.Child("podManagementPolicy"))
	errs = append(errs, validateReserveOrdinals(spec.ReserveOrdinals, path)...)
	if ss := spec.ScaleStrategy; ss != nil && ss.MaxUnavailable != nil {
		errs = append(errs, validateMaxUnavailable(ss.MaxUnavailable, spec.PodManagementPolicy, path.Child("scaleStrategy", "maxUnavailable"))...)
	}
	errs = append(errs, validateUpdateStrategy(spec, path)...)
	errs = append(errs, validateRetentionPolicy(spec.PersistentVolumeClaimRetentionPolicy, path.Child("persistentVolumeClaimRetentionPolicy"))...)
	if spec.Replicas != nil {
		errs = append(errs, corevalidation.ValidateNonnegativeField(int64(*spec.Replicas), path.Child("replicas"))...)
	}
	errs = append(errs, validateSelector(spec, path)...)
	errs = append(errs, workloadspec.ValidateTemplate(&spec.Template, spec.VolumeClaimTemplates, oldTemplate, "StatefulSet", path.Child("template"))...)
	return append(errs, workloadspec.ValidateLifecycle(spec.Lifecycle, path.Child("lifecycle"))...)
}

func validatePodManagementPolicy(p appsv1.PodManagementPolicyType, path *field.Path) field.ErrorList {
	switch p {
	case "":
		return field.ErrorList{field.Required(path, "")}
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
		return nil
	}
	return field.ErrorList{field.Invalid(path, p, "must be 'OrderedReady' or 'Parallel'")}
}

var ordinalRange = regexp.MustCompile(`^\d+-\d+$`)

// validateReserveOrdinals reports each bad element at spec, with the whole
// list as the value, as OpenKruise does. A single ordinal must be an
// integer: "5" is not a range.
func validateReserveOrdinals(reserved []intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range reserved {
		switch {
		case r.Type == intstr.String:
			if !ordinalRange.MatchString(r.StrVal) {
				errs = append(errs, field.Invalid(path, reserved, fmt.Sprintf("%d th reserve ordinal is not a valid range: %s", i, r.StrVal)))
			}
			if _, _, err := ParseRange(r.StrVal); err != nil {
				errs = append(errs, field.Invalid(path, reserved, fmt.Sprintf("%d th reserve ordinal is invalid: %s, err = %s", i, r.StrVal, err)))
			}
		case r.IntVal < 0:
			errs = append(errs, field.Invalid(path, reserved, fmt.Sprintf("%d th reserve ordinal is negative: %d", i, r.IntVal)))
		}
	}
	return errs
}

// ParseRange reads an inclusive "a-b" range of ordinals.
func ParseRange(s string) (start, end int, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok || strings.Contains(b, "-") {
		return 0, 0, fmt.Errorf("invalid range %s", s)
	}
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	if end, err = strconv.Atoi(b); err != nil {
		return 0, 0, err
	}
	if start > end {
		return 0, 0, fmt.Errorf("invalid range %s", s)
	}
	return start, end, nil
}

func validateUpdateStrategy(spec *appsv1beta1.StatefulSetSpec, path *field.Path) field.ErrorList {
	us := &spec.UpdateStrategy
	switch us.Type {
	case "":
		return field.ErrorList{field.Required(path.Child("updateStrategy"), "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if us.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(path.Child("updateStrategy", "rollingUpdate"), us.RollingUpdate, "only allowed for updateStrategy 'RollingUpdate'")}
		}
		return nil
	case appsv1.RollingUpdateStatefulSetStrategyType:
		return validateRollingUpdate(spec, path)
	}
	return field.ErrorList{field.Invalid(path.Child("updateStrategy"), us, "must be 'RollingUpdate' or 'OnDelete'")}
}

func validateRollingUpdate(spec *appsv1beta1.StatefulSetSpec, path *field.Path) field.ErrorList {
	ru := spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		return nil
	}
	p := path.Child("updateStrategy", "rollingUpdate")
	var errs field.ErrorList
	if ru.Partition != nil {
		errs = append(errs, corevalidation.ValidateNonnegativeField(int64(*ru.Partition), p.Child("partition"))...)
	}
	if mrs := ru.MinReadySeconds; mrs != nil {
		errs = append(errs, corevalidation.ValidateNonnegativeField(int64(*mrs), p.Child("minReadySeconds"))...)
		if *mrs > appsv1beta1.MaxMinReadySeconds {
			errs = append(errs, field.Invalid(p.Child("minReadySeconds"), *mrs, "must be no more than 300 seconds"))
		}
	}
	if ru.MaxUnavailable == nil {
		errs = append(errs, field.Required(p.Child("maxUnavailable"), ""))
	} else {
		errs = append(errs, validateMaxUnavailable(ru.MaxUnavailable, spec.PodManagementPolicy, p.Child("maxUnavailable"))...)
	}
	errs = append(errs, validatePodUpdatePolicy(spec, path)...)
	if uu := ru.UnorderedUpdate; uu != nil {
		if spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			errs = append(errs, field.Required(p.Child("unorderedUpdate"), "unorderedUpdate can only work with Parallel PodManagementPolicyType"))
		}
		if msg := workloadspec.PriorityError(uu.PriorityStrategy); msg != "" {
			errs = append(errs, field.Required(p.Child("unorderedUpdate", "priorityStrategy"), msg))
		}
	}
	return errs
}

// validateMaxUnavailable: a positive number or percent that is at least 1
// of 1 rounded up, and exactly 1 unless pods are managed in Parallel.
func validateMaxUnavailable(v *intstr.IntOrString, policy appsv1.PodManagementPolicyType, path *field.Path) field.ErrorList {
	errs := appsvalidation.ValidatePositiveIntOrPercent(*v, path)
	if n, err := intstr.GetScaledValueFromIntOrPercent(v, 1, true); err != nil {
		errs = append(errs, field.Invalid(path, v, fmt.Sprintf("getValueFromIntOrPercent error: %v", err)))
	} else if n < 1 {
		errs = append(errs, field.Invalid(path, v, "should not be less than 1"))
	}
	if policy != appsv1.ParallelPodManagement && (v.Type != intstr.Int || v.IntVal != 1) {
		errs = append(errs, field.Invalid(path, v, "can only work with Parallel PodManagementPolicyType"))
	}
	return errs
}

func validatePodUpdatePolicy(spec *appsv1beta1.StatefulSetSpec, path *field.Path) field.ErrorList {
	policy := spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy
	switch policy {
	case "":
		return field.ErrorList{field.Required(path.Child("updateStrategy", "rollingUpdate", "podUpdatePolicy"), "")}
	case appsv1beta1.RecreatePodUpdateStrategyType:
		return nil
	case appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, appsv1beta1.InPlaceOnlyPodUpdateStrategyType:
		for _, g := range spec.Template.Spec.ReadinessGates {
			if g.ConditionType == pub.InPlaceUpdateReady {
				return nil
			}
		}
		return field.ErrorList{field.Invalid(path.Child("template", "spec", "readinessGates"), spec.Template.Spec.ReadinessGates,
			fmt.Sprintf("must contains %v when podUpdatePolicy is %v", pub.InPlaceUpdateReady, policy))}
	}
	return field.ErrorList{field.Invalid(path.Child("updateStrategy", "rollingUpdate", "podUpdatePolicy"), policy, "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'")}
}

func validateRetentionPolicy(p *appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	supported := []string{string(appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType)}
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value appsv1beta1.PersistentVolumeClaimRetentionPolicyType
	}{{"whenDeleted", p.WhenDeleted}, {"whenScaled", p.WhenScaled}} {
		if f.value != appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType && f.value != appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType {
			errs = append(errs, field.NotSupported(path.Child(f.name), f.value, supported))
		}
	}
	return errs
}

// validateSelector: required, valid, not empty, and matching the
// template's labels.
func validateSelector(spec *appsv1beta1.StatefulSetSpec, path *field.Path) field.ErrorList {
	p := path.Child("selector")
	if spec.Selector == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, spec.Selector, "empty selector is invalid for statefulset"))
	}
	selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		return append(errs, field.Invalid(p, spec.Selector, ""))
	}
	if !selector.Empty() && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

var imagePath = regexp.MustCompile(`^/containers/([0-9]+)/image$`)

// validateInPlaceOnly refuses every change to the pod spec but container
// images, in OpenKruise's words: an InPlaceOnly set never recreates pods.
func validateInPlaceOnly(old, tmpl *corev1.PodTemplateSpec) field.ErrorList {
	before, err1 := json.Marshal(old.Spec)
	after, err2 := json.Marshal(tmpl.Spec)
	if err1 != nil || err2 != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "template"), fmt.Errorf("encoding templates: %v %v", err1, err2))}
	}
	ops, err := jsonpatch.CreatePatch(before, after)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "template"), err)}
	}
	for _, op := range ops {
		if op.Operation != "replace" || !imagePath.MatchString(op.Path) {
			return field.ErrorList{field.Forbidden(field.NewPath("spec", "template", "spec"),
				fmt.Sprintf("invalid template modified with InPlaceOnly strategy: %s %s, currently only image update is allowed for InPlaceOnly", op.Operation, op.Path))}
		}
	}
	return nil
}
