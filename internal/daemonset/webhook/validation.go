package webhook

import (
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/workloadspec"
)

// Version says which version a request came in: v1alpha1 still accepts
// the Surging type, and its messages differ in places.
type Version struct {
	// Alpha is true for a v1alpha1 request.
	Alpha bool
	// RollingUpdateType is the request's own type, before a v1alpha1
	// Surging became Standard on the way to v1beta1.
	RollingUpdateType string
}

// ValidateCreate checks a new set, defaults filled in.
func ValidateCreate(ds *appsv1beta1.DaemonSet, v Version) field.ErrorList {
	errs := corevalidation.ValidateObjectMeta(&ds.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateSpec(&ds.Spec, v, field.NewPath("spec"))...)
}

// ValidateUpdate checks a change to a set: only the selector is frozen.
func ValidateUpdate(ds, old *appsv1beta1.DaemonSet, v Version) field.ErrorList {
	errs := corevalidation.ValidateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	frozen := old.Spec.DeepCopy()
	s := &ds.Spec
	frozen.Template, frozen.UpdateStrategy, frozen.Lifecycle = s.Template, s.UpdateStrategy, s.Lifecycle
	frozen.BurstReplicas, frozen.MinReadySeconds, frozen.RevisionHistoryLimit = s.BurstReplicas, s.MinReadySeconds, s.RevisionHistoryLimit
	frozen.ScaleStrategy = s.ScaleStrategy
	if !apiequality.Semantic.DeepEqual(*frozen, *s) {
		msg := "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden"
		if v.Alpha {
			msg = "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle',  'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden"
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec"), msg))
	}
	return append(errs, validateSpec(s, v, field.NewPath("spec"))...)
}

func validateSpec(spec *appsv1beta1.DaemonSetSpec, v Version, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path.Child("selector"), spec.Selector, "empty selector is invalid for daemonset"))
	}
	// The template is checked with the pod defaults applied, as OpenKruise
	// checks it, though it is stored without them.
	tmpl := spec.Template.DeepCopy()
	workloadspec.DefaultTemplates(tmpl, nil)
	errs = append(errs, workloadspec.ValidateTemplate(tmpl, nil, nil, "DaemonSet", path.Child("template"))...)
	errs = append(errs, corevalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	errs = append(errs, validateUpdateStrategy(&spec.UpdateStrategy, v, path.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, corevalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), path.Child("revisionHistoryLimit"))...)
	}
	if l := spec.Lifecycle; l != nil && l.InPlaceUpdate != nil {
		errs = append(errs, field.Forbidden(path.Child("lifecycle", "inPlaceUpdate"), "inPlaceUpdate hook has not supported yet"))
	}
	// Lifeline's own checks: a hook label no pod can carry would hold a
	// pod forever, and a burst the controller cannot read would stop it.
	errs = append(errs, workloadspec.ValidateLifecycle(spec.Lifecycle, path.Child("lifecycle"))...)
	if b := spec.BurstReplicas; b != nil {
		errs = append(errs, validateNonnegativeIntOrPercent(*b, path.Child("burstReplicas"))...)
	}
	return errs
}

func validateUpdateStrategy(s *appsv1beta1.DaemonSetUpdateStrategy, v Version, path *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1beta1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1beta1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(path.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdate(s.RollingUpdate, v, path.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(path, *s, []string{string(appsv1beta1.RollingUpdateDaemonSetStrategyType), string(appsv1beta1.OnDeleteDaemonSetStrategyType)})}
	}
}

func validateRollingUpdate(ru *appsv1beta1.RollingUpdateDaemonSet, v Version, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	hasUnavailable := ru.MaxUnavailable != nil && intOrPercentValue(*ru.MaxUnavailable) != 0
	hasSurge := ru.MaxSurge != nil && intOrPercentValue(*ru.MaxSurge) != 0
	if hasUnavailable {
		errs = append(errs, appsvalidation.ValidatePositiveIntOrPercent(*ru.MaxUnavailable, path.Child("maxUnavailable"))...)
		errs = append(errs, appsvalidation.IsNotMoreThan100Percent(*ru.MaxUnavailable, path.Child("maxUnavailable"))...)
	}
	if hasSurge {
		errs = append(errs, appsvalidation.ValidatePositiveIntOrPercent(*ru.MaxSurge, path.Child("maxSurge"))...)
		errs = append(errs, appsvalidation.IsNotMoreThan100Percent(*ru.MaxSurge, path.Child("maxSurge"))...)
	}
	switch {
	case hasUnavailable && hasSurge:
		errs = append(errs, field.Invalid(path.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		errs = append(errs, field.Required(path.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	// OpenKruise's paths for the type and the partition repeat
	// "rollingUpdate"; kept, so that tools matching them still match.
	typ := ru.Type
	if v.Alpha {
		typ = appsv1beta1.RollingUpdateType(v.RollingUpdateType)
	}
	switch typ {
	case "", appsv1beta1.StandardRollingUpdateType:
	case appsv1beta1.InplaceRollingUpdateType:
		if hasSurge {
			errs = append(errs, field.Required(path.Child("maxSurge"), "must be 0 for InPlaceIfPossible type"))
		}
	default:
		if v.Alpha && string(typ) == string(appsv1alpha1.DeprecatedSurgingRollingUpdateType) {
			if hasUnavailable {
				errs = append(errs, field.Required(path.Child("maxUnavailable"), "must be 0 for Surging type"))
			}
			break
		}
		valid := []string{string(appsv1beta1.StandardRollingUpdateType), string(appsv1beta1.InplaceRollingUpdateType)}
		if v.Alpha {
			valid = []string{string(appsv1beta1.StandardRollingUpdateType), string(appsv1alpha1.DeprecatedSurgingRollingUpdateType), string(appsv1beta1.InplaceRollingUpdateType)}
		}
		errs = append(errs, field.NotSupported(path.Child("rollingUpdate", "type"), typ, valid))
	}
	if ru.Partition != nil {
		p := path.Child("rollingUpdate", "partition")
		errs = append(errs, validateNonnegativeIntOrPercent(*ru.Partition, p)...)
		errs = append(errs, appsvalidation.IsNotMoreThan100Percent(*ru.Partition, p)...)
	}
	// Lifeline's own: a node selector that does not parse would stop the
	// update at its first step.
	errs = append(errs, metav1validation.ValidateLabelSelector(ru.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
	return errs
}

// intOrPercentValue is OpenKruise's reading of maxUnavailable and
// maxSurge when it decides whether they are zero: a valid percent's
// number, else the value as an integer (a string that is neither reads 0).
func intOrPercentValue(v intstr.IntOrString) int {
	if v.Type == intstr.String && len(validation.IsValidPercent(v.StrVal)) == 0 {
		n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
		return n
	}
	return v.IntValue()
}

func validateNonnegativeIntOrPercent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	if v.Type == intstr.String {
		return appsvalidation.ValidatePositiveIntOrPercent(v, path)
	}
	return corevalidation.ValidateNonnegativeField(int64(v.IntValue()), path)
}
