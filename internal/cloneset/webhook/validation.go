package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/lifeline-k8s/lifeline/internal/workloadref"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	corehelper "k8s.io/kubernetes/pkg/apis/core/helper"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
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
	errs = append(errs, validateTemplate(cs, old, path.Child("template"))...)
	errs = append(errs, validateScaleStrategy(ctx, pods, cs, old, path.Child("scaleStrategy"))...)
	errs = append(errs, validateUpdateStrategy(spec, int(replicas), path.Child("updateStrategy"))...)
	errs = append(errs, validateLifecycle(spec.Lifecycle, path.Child("lifecycle"))...)
	if pds := spec.ProgressDeadlineSeconds; pds != nil {
		errs = append(errs, corevalidation.ValidateNonnegativeField(int64(*pds), path.Child("progressDeadlineSeconds"))...)
		if *pds != math.MaxInt32 && *pds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(path.Child("progressDeadlineSeconds"), *pds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

// validateTemplate validates the template as Kubernetes validates a pod
// template, with each volumeClaimTemplate added as a volume: a template
// volume of the same name is a duplicate, and mounts may name the claims.
func validateTemplate(cs, old *appsv1alpha1.CloneSet, path *field.Path) field.ErrorList {
	tmpl := cs.Spec.Template.DeepCopy()
	for _, vct := range cs.Spec.VolumeClaimTemplates {
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: vct.Name},
		}})
	}
	internal := &core.PodTemplateSpec{}
	if err := corev1conversion.Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec(tmpl, internal, nil); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath(""), cs.Spec.Template, fmt.Sprintf("Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec failed: %v", err))}
	}
	var oldInternal *core.PodTemplateSpec
	if old != nil {
		oldInternal = &core.PodTemplateSpec{}
		if err := corev1conversion.Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec(&old.Spec.Template, oldInternal, nil); err != nil {
			oldInternal = nil
		}
	}
	errs := corevalidation.ValidatePodTemplateSpec(internal, path, podutil.GetValidationOptionsFromPodTemplate(internal, oldInternal))
	if rp := cs.Spec.Template.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(path.Child("spec", "restartPolicy"), rp, []string{string(corev1.RestartPolicyAlways)}))
	}
	if cs.Spec.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(path.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in cloneset is not Supported"))
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
	if msg := priorityError(us); msg != "" {
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

// priorityError is the first problem of priorityStrategy, in OpenKruise's
// words. A weight of 0 is accepted, as in OpenKruise.
func priorityError(us *appsv1alpha1.CloneSetUpdateStrategy) string {
	ps := us.PriorityStrategy
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

// validateLifecycle checks the hooks' handlers as the API server would check
// them on a pod: a label or finalizer the pod could never carry would hold
// it forever. OpenKruise accepts them; we refuse them with their field path.
func validateLifecycle(l *pub.Lifecycle, path *field.Path) field.ErrorList {
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
