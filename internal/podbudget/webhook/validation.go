// Package webhook admits PodUnavailableBudgets: it validates them with
// OpenKruise's rules and messages (reference A14), every error at once,
// each with its field path.
package webhook

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/lifeline-k8s/lifeline/internal/conversion"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// ValidatePath is OpenKruise's path for the budget's validating webhook.
const ValidatePath = "/validate-policy-kruise-io-podunavailablebudget"

// +kubebuilder:webhook:path=/validate-policy-kruise-io-podunavailablebudget,mutating=false,failurePolicy=fail,sideEffects=None,groups=policy.kruise.io,resources=podunavailablebudgets,verbs=create;update,versions=v1alpha1,name=vpodunavailablebudget.kb.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets,verbs=get;list;watch

// Register serves the budget's validating webhook; budgets reads the other
// budgets of a namespace, for conflicts.
func Register(server webhook.Server, decoder admission.Decoder, budgets client.Reader) {
	server.Register(ValidatePath, &webhook.Admission{Handler: &validator{decoder: decoder, budgets: budgets}})
}

type validator struct {
	decoder admission.Decoder
	budgets client.Reader
}

func (v *validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	pub := &policyv1alpha1.PodUnavailableBudget{}
	if err := v.decoder.Decode(req, pub); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *policyv1alpha1.PodUnavailableBudget
	if req.Operation == admissionv1.Update {
		old = &policyv1alpha1.PodUnavailableBudget{}
		if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	list := &policyv1alpha1.PodUnavailableBudgetList{}
	if err := v.budgets.List(ctx, list, client.InNamespace(req.Namespace)); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("query other podUnavailableBudget failed, err: %w", err))
	}
	errs := Validate(pub, old, list.Items)
	if len(errs) == 0 {
		pods := &corev1.PodList{}
		if err := v.budgets.List(ctx, pods, client.InNamespace(req.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			pods.Items = nil // warnings are advice: go without the pods' view
		}
		return admission.Allowed("").WithWarnings(Warnings(ctx, v.budgets, pub, list.Items, pods.Items)...)
	}
	if conversion.RequestedInHub(req.RequestKind) {
		errs = conversion.HubPaths(conversion.PodUnavailableBudget, errs)
	}
	status := apierrors.NewInvalid(policyv1alpha1.GroupVersion.WithKind("PodUnavailableBudget").GroupKind(), pub.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// Validate checks a budget, against its previous version on update (nil
// on create) and the other budgets of its namespace.
func Validate(pub, old *policyv1alpha1.PodUnavailableBudget, others []policyv1alpha1.PodUnavailableBudget) field.ErrorList {
	errs := validateAnnotations(pub.Annotations)
	spec, p := pub.Spec, field.NewPath("spec")
	switch {
	case spec.Selector == nil && spec.TargetReference == nil:
		errs = append(errs, field.Required(p.Child("selector"), "no selector or targetRef defined in PodUnavailableBudget"))
	case spec.Selector != nil && spec.TargetReference != nil:
		errs = append(errs, field.Forbidden(p.Child("targetRef"), "selector and targetRef are mutually exclusive"))
	case spec.TargetReference != nil:
		errs = append(errs, validateTarget(spec.TargetReference, p.Child("targetRef"))...)
	default:
		errs = append(errs, validateSelector(spec.Selector, p.Child("selector"))...)
	}
	switch {
	case spec.MaxUnavailable == nil && spec.MinAvailable == nil:
		errs = append(errs, field.Required(p.Child("maxUnavailable"), "no maxUnavailable or minAvailable defined in PodUnavailableBudget"))
	case spec.MaxUnavailable != nil && spec.MinAvailable != nil:
		errs = append(errs, field.Forbidden(p.Child("minAvailable"), "maxUnavailable and minAvailable are mutually exclusive"))
	case spec.MaxUnavailable != nil:
		errs = append(errs, validateIntOrPercent(*spec.MaxUnavailable, p.Child("maxUnavailable"))...)
	default:
		errs = append(errs, validateIntOrPercent(*spec.MinAvailable, p.Child("minAvailable"))...)
	}
	if old != nil && (!apiequality.Semantic.DeepEqual(old.Spec.Selector, spec.Selector) || !apiequality.Semantic.DeepEqual(old.Spec.TargetReference, spec.TargetReference)) {
		errs = append(errs, field.Forbidden(p.Child("selector"), "selector and targetRef cannot be modified"))
	}
	return append(errs, conflicts(pub, others)...)
}

func validateAnnotations(annotations map[string]string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("metadata", "annotations")
	if ops, ok := annotations[policyv1alpha1.PubProtectOperationAnnotation]; ok {
		valid := []policyv1alpha1.PubOperation{policyv1alpha1.PubDeleteOperation, policyv1alpha1.PubUpdateOperation,
			policyv1alpha1.PubEvictOperation, policyv1alpha1.PubResizeOperation}
		for _, op := range strings.Split(ops, ",") {
			if !slices.Contains(valid, policyv1alpha1.PubOperation(op)) {
				errs = append(errs, field.NotSupported(p.Key(policyv1alpha1.PubProtectOperationAnnotation), op, []string{"DELETE", "UPDATE", "EVICT", "RESIZE"}))
			}
		}
	}
	if total, ok := annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]; ok {
		if _, err := strconv.ParseInt(total, 10, 32); err != nil {
			errs = append(errs, field.Invalid(p.Key(policyv1alpha1.PubProtectTotalReplicasAnnotation), total, "must be a valid int32"))
		}
	}
	return errs
}

func validateTarget(t *policyv1alpha1.TargetReference, p *field.Path) field.ErrorList {
	if t.APIVersion == "" || t.Kind == "" || t.Name == "" {
		return field.ErrorList{field.Invalid(p, t, "empty TargetReference is not valid for PodUnavailableBudget.")}
	}
	if _, err := schema.ParseGroupVersion(t.APIVersion); err != nil {
		return field.ErrorList{field.Invalid(p.Child("apiVersion"), t.APIVersion, err.Error())}
	}
	return nil
}

func validateSelector(s *metav1.LabelSelector, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(s.MatchLabels)+len(s.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, s, "empty selector is not valid for PodUnavailableBudget."))
	}
	return errs
}

// validateIntOrPercent is Kubernetes' apps validation of a budget
// number: a non-negative integer, or a percent of at most 100.
func validateIntOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(p, v.IntVal, "must be greater than or equal to 0")}
		}
	case intstr.String:
		pct, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
		switch {
		case !strings.HasSuffix(v.StrVal, "%") || err != nil:
			return field.ErrorList{field.Invalid(p, v.StrVal, "must be an integer or percentage (e.g '5%')")}
		case pct < 0:
			return field.ErrorList{field.Invalid(p, v.StrVal, "must be greater than or equal to 0")}
		case pct > 100:
			return field.ErrorList{field.Invalid(p, v.StrVal, "must not be greater than 100%")}
		}
	}
	return nil
}

// conflicts finds other budgets of the namespace guarding the same pods:
// the same target (group, kind and name), or selectors that loosely
// overlap.
func conflicts(pub *policyv1alpha1.PodUnavailableBudget, others []policyv1alpha1.PodUnavailableBudget) field.ErrorList {
	var errs field.ErrorList
	for i := range others {
		o := &others[i]
		if o.Name == pub.Name {
			continue
		}
		switch {
		case pub.Spec.TargetReference != nil && o.Spec.TargetReference != nil:
			if sameTarget(pub.Spec.TargetReference, o.Spec.TargetReference) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "targetRef"), pub.Spec.TargetReference,
					fmt.Sprintf("pub.spec.targetReference is in conflict with other PodUnavailableBudget %s", o.Name)))
			}
		case pub.Spec.Selector != nil && o.Spec.Selector != nil:
			if LooseOverlap(pub.Spec.Selector, o.Spec.Selector) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), pub.Spec.Selector,
					fmt.Sprintf("pub.spec.selector is in conflict with other PodUnavailableBudget %s", o.Name)))
			}
		}
	}
	return errs
}

func sameTarget(a, b *policyv1alpha1.TargetReference) bool {
	ga, errA := schema.ParseGroupVersion(a.APIVersion)
	gb, errB := schema.ParseGroupVersion(b.APIVersion)
	return errA == nil && errB == nil && ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name
}

// LooseOverlap is OpenKruise's IsSelectorLooseOverlap: two selectors
// overlap when they constrain exactly the same keys and every key's two
// requirements can hold at once.
func LooseOverlap(a, b *metav1.LabelSelector) bool {
	ra, rb := requirements(a), requirements(b)
	if len(ra) != len(rb) {
		return false
	}
	for k, x := range ra {
		y, ok := rb[k]
		if !ok || !compatible(x, y) {
			return false
		}
	}
	return true
}

type requirement struct {
	op     metav1.LabelSelectorOperator
	values []string
}

func requirements(s *metav1.LabelSelector) map[string]requirement {
	out := map[string]requirement{}
	for _, e := range s.MatchExpressions {
		out[e.Key] = requirement{op: e.Operator, values: e.Values}
	}
	for k, v := range s.MatchLabels {
		out[k] = requirement{op: metav1.LabelSelectorOpIn, values: []string{v}}
	}
	return out
}

// compatible reports whether some label value satisfies both requirements.
func compatible(x, y requirement) bool {
	if x.op == metav1.LabelSelectorOpExists || y.op == metav1.LabelSelectorOpExists {
		return x.op != metav1.LabelSelectorOpDoesNotExist && y.op != metav1.LabelSelectorOpDoesNotExist
	}
	switch {
	case x.op == metav1.LabelSelectorOpIn && y.op == metav1.LabelSelectorOpIn:
		return slices.ContainsFunc(x.values, func(v string) bool { return slices.Contains(y.values, v) })
	case x.op == metav1.LabelSelectorOpIn && y.op == metav1.LabelSelectorOpNotIn:
		return !containsAll(y.values, x.values)
	case x.op == metav1.LabelSelectorOpNotIn && y.op == metav1.LabelSelectorOpIn:
		return !containsAll(x.values, y.values)
	case x.op == metav1.LabelSelectorOpNotIn && (y.op == metav1.LabelSelectorOpNotIn || y.op == metav1.LabelSelectorOpDoesNotExist):
		return true
	case x.op == metav1.LabelSelectorOpDoesNotExist && (y.op == metav1.LabelSelectorOpDoesNotExist || y.op == metav1.LabelSelectorOpNotIn):
		return true
	}
	return false
}

func containsAll(set, items []string) bool {
	for _, i := range items {
		if !slices.Contains(set, i) {
			return false
		}
	}
	return true
}
