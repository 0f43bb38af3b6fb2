package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"

	"github.com/lifeline-k8s/lifeline/internal/workloadref"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/workloadspec"
)

// PodGetter looks up pods named in scaleStrategy.podsToDelete.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// ValidateCreate checks a new CloneSet.
func ValidateCreate(ctx context.Context, pods PodGetter, cs *appsv1alpha1.CloneSet) field.ErrorList {
	errs := corevalidation.ValidateObjectMeta(&cs.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateSpec(ctx, pods, cs, nil, field.NewPath("spec"))...)
}

// ValidateUpdate checks a change to a CloneSet. Only replicas, template,
// lifecycle, scaleStrategy, updateStrategy, minReadySeconds,
// progressDeadlineSeconds, volumeClaimTemplates and revisionHistoryLimit
// may change, so the selector is immutable.
func ValidateUpdate(ctx context.Context, pods PodGetter, cs, old *appsv1alpha1.CloneSet) field.ErrorList {
	errs := corevalidation.ValidateObjectMetaUpdate(&cs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	frozen := old.Spec.DeepCopy()
	frozen.Replicas, frozen.Template, frozen.Lifecycle = cs.Spec.Replicas, cs.Spec.Template, cs.Spec.Lifecycle
	frozen.ScaleStrategy, frozen.UpdateStrategy, frozen.MinReadySeconds = cs.Spec.ScaleStrategy, cs.Spec.UpdateStrategy, cs.Spec.MinReadySeconds
	frozen.ProgressDeadlineSeconds, frozen.VolumeClaimTemplates, frozen.RevisionHistoryLimit = cs.Spec.ProgressDeadlineSeconds, cs.Spec.VolumeClaimTemplates, cs.Spec.RevisionHistoryLimit
	if !apiequality.Semantic.DeepEqual(*frozen, cs.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden"))
	}
	if cs.Spec.UpdateStrategy.Type == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType {
		errs = append(errs, validateInPlaceOnly(old, cs)...)
	}
	return append(errs, validateSpec(ctx, pods, cs, old, field.NewPath("spec"))...)
}

var imagePath = regexp.MustCompile(`^/containers/([0-9]+)/image$`)

// validateInPlaceOnly refuses every change to the pod spec but container
// images: an InPlaceOnly CloneSet never recreates pods.
func validateInPlaceOnly(old, cs *appsv1alpha1.CloneSet) field.ErrorList {
	before, err1 := json.Marshal(old.Spec.Template.Spec)
	after, err2 := json.Marshal(cs.Spec.Template.Spec)
	if err1 != nil || err2 != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("encoding templates: %v %v", err1, err2))}
	}
	ops, err := jsonpatch.CreatePatch(before, after)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Path < ops[j].Path })
	for _, op := range ops {
		if op.Operation != "replace" || !imagePath.MatchString(op.Path) {
			return field.ErrorList{field.Forbidden(field.NewPath("spec"),
				fmt.Sprintf("only allowed to update images in spec for InPlaceOnly, but found %s %s", op.Operation, op.Path))}
		}
	}
	return nil
}

func validateSpec(ctx context.Context, pods PodGetter, cs, old *appsv1alpha1.CloneSet, path *field.Path) field.ErrorList {
	spec := &cs.Spec
	var errs field.ErrorList
	replicas := workloadref.Replicas(spec.Replicas)
	if spec.Replicas != nil {
		errs = append(errs, corevalidation.ValidateNonnegativeField(int64(replicas), path.Child("replicas"))...)
	}

	var selector labels.Selector
	if spec.Selector == nil {
		errs = append(errs, field.Required(path.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(path.Child("selector"), spec.Selector, "empty selector is invalid for cloneset"))
		}
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
			errs = append(errs, field.Invalid(path.Child("selector"), spec.Selector, ""))
		}
	}
	if selector != nil && !selector.Empty() && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	var oldTemplate *corev1.PodTemplateSpec
	if old != nil {
		oldTemplate = &old.Spec.Template
	}
	errs = append(errs, workloadspec.ValidateTemplate(&spec.Template, spec.VolumeClaimTemplates, oldTemplate, "cloneset", path.Child("template"))...)
	errs = append(errs, validateScaleStrategy(ctx, pods, cs, old, path.Child("scaleStrategy"))...)
	errs = append(errs, validateUpdateStrategy(spec, int(replicas), path.Child("updateStrategy"))...)
	errs = append(errs, workloadspec.ValidateLifecycle(spec.Lifecycle, path.Child("lifecycle"))...)
	if pds := spec.ProgressDeadlineSeconds; pds != nil {
		errs = append(errs, corevalidation.ValidateNonnegativeField(int64(*pds), path.Child("progressDeadlineSeconds"))...)
		if *pds != math.MaxInt32 && *pds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(path.Child("progressDeadlineSeconds"), *pds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

// validateScaleStrategy checks podsToDelete: no duplicates, and every name
// newly added names a live pod of this CloneSet.
func validateScaleStrategy(ctx context.Context, pods PodGetter, cs, old *appsv1alpha1.CloneSet, path *field.Path) field.ErrorList {
	names := cs.Spec.ScaleStrategy.PodsToDelete
	p := path.Child("podsToDelete")
	seen, dups := map[string]bool{}, []string{}
	for _, n := range names {
		if seen[n] {
			dups = append(dups, n)
		}
		seen[n] = true
	}
	if len(dups) > 0 {
		return field.ErrorList{field.Invalid(p, names, fmt.Sprintf("duplicated items %v", dups))}
	}
	before := map[string]bool{}
	if old != nil {
		for _, n := range old.Spec.ScaleStrategy.PodsToDelete {
			before[n] = true
		}
	}
	var errs field.ErrorList
	for _, n := range names {
		if before[n] {
			continue
		}
		pod, err := pods.GetPod(ctx, cs.Namespace, n)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p, n, fmt.Sprintf("find pod %s failed: %v", n, err)))
		case pod.DeletionTimestamp != nil:
			errs = append(errs, field.Invalid(p, n, fmt.Sprintf("find pod %s already terminating", n)))
		case metav1.GetControllerOf(pod) == nil || metav1.GetControllerOf(pod).UID != cs.UID:
			errs = append(errs, field.Invalid(p, n, fmt.Sprintf("find pod %s owner is not this CloneSet", n)))
		}
	}
	return errs
}

func validateUpdateStrategy(spec *appsv1alpha1.CloneSetSpec, replicas int, path *field.Path) field.ErrorList {
	us := &spec.UpdateStrategy
	var errs field.ErrorList
	switch us.Type {
	case appsv1alpha1.RecreateCloneSetUpdateStrategyType, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType:
	default:
		errs = append(errs, field.Invalid(path.Child("type"), us.Type, "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'"))
	}
	if us.Partition != nil {
		if p, err := planner.ScaledValue(us.Partition, replicas, true); err != nil {
			errs = append(errs, field.Invalid(path.Child("partition"), us.Partition.String(), "failed GetScaledValueFromIntOrPercent for partition: "+err.Error()))
		} else {
			errs = append(errs, corevalidation.ValidateNonnegativeField(int64(p), path.Child("partition"))...)
		}
	}
	if msg := workloadspec.PriorityError(us.PriorityStrategy); msg != "" {
		errs = append(errs, field.Required(path.Child("priorityStrategy"), msg))
	}
	if msg := scatterError(us.ScatterStrategy); msg != "" {
		errs = append(errs, field.Required(path.Child("scatterStrategy"), msg))
	}
	maxUnavailable, maxSurge := 0, 0
	if us.MaxUnavailable != nil {
		v, err := planner.ScaledValue(us.MaxUnavailable, replicas, true)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("maxUnavailable"), us.MaxUnavailable.String(), "failed GetScaledValueFromIntOrPercent for maxUnavailable: "+err.Error()))
		}
		maxUnavailable = v
	}
	if us.MaxSurge != nil {
		v, err := planner.ScaledValue(us.MaxSurge, replicas, true)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("maxSurge"), us.MaxSurge.String(), "failed GetScaledValueFromIntOrPercent for maxSurge: "+err.Error()))
		}
		maxSurge = v
		if us.Type == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType && maxSurge > 0 {
			errs = append(errs, field.Invalid(path.Child("maxSurge"), us.MaxSurge.String(), "can not use maxSurge with strategy type InPlaceOnly"))
		}
	}
	if replicas > 0 && maxUnavailable < 1 && maxSurge < 1 {
		value := ""
		if us.MaxUnavailable != nil {
			value = us.MaxUnavailable.String()
		}
		errs = append(errs, field.Invalid(path.Child("maxUnavailable"), value, "maxUnavailable and maxSurge should not both be less than 1"))
	}
	return errs
}

func scatterError(terms appsv1alpha1.UpdateScatterStrategy) string {
	seen := map[appsv1alpha1.UpdateScatterTerm]bool{}
	for _, t := range terms {
		if t.Key == "" {
			return "key should not be empty"
		}
		if seen[t] {
			return fmt.Sprintf("duplicated key=%v value=%v", t.Key, t.Value)
		}
		seen[t] = true
	}
	return ""
}
