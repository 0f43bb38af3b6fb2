// Package webhook admits PersistentPodStates (validation, every error at
// once with its field path) and steers the pods of their workloads back to
// where they ran (a mutator registered with the pod admission entry point).
package webhook

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/lifeline-k8s/lifeline/internal/workloadref"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/pps/workloads"
)

// ValidatePath is OpenKruise's path for the validating webhook.
const ValidatePath = "/validate-apps-kruise-io-persistentpodstate"

// +kubebuilder:webhook:path=/validate-apps-kruise-io-persistentpodstate,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=persistentpodstates,verbs=create;update,versions=v1alpha1,name=vpersistentpodstate.kb.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=apps.kruise.io,resources=persistentpodstates,verbs=get;list;watch

// Register serves the validating webhook; states reads the other
// PersistentPodStates of a namespace, for conflicts.
func Register(server webhook.Server, decoder admission.Decoder, states client.Reader, custom *workloads.Whitelist) {
	server.Register(ValidatePath, &webhook.Admission{Handler: &validator{decoder: decoder, states: states, custom: custom}})
}

type validator struct {
	decoder admission.Decoder
	states  client.Reader
	custom  *workloads.Whitelist
}

func (v *validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	pps := &appsv1alpha1.PersistentPodState{}
	if err := v.decoder.Decode(req, pps); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *appsv1alpha1.PersistentPodState
	if req.Operation == admissionv1.Update {
		old = &appsv1alpha1.PersistentPodState{}
		if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	custom, err := v.custom.Kinds(ctx)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("failed to get persistent pod state config white list, error: %w", err))
	}
	list := &appsv1alpha1.PersistentPodStateList{}
	if err := v.states.List(ctx, list, client.InNamespace(req.Namespace)); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("query other PersistentPodState failed, err: %w", err))
	}
	errs := Validate(pps, old, list.Items, custom)
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	status := apierrors.NewInvalid(appsv1alpha1.GroupVersion.WithKind("PersistentPodState").GroupKind(), pps.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// Validate checks a PersistentPodState, against its previous version on
// update (nil on create), the other PersistentPodStates of its namespace
// and the whitelisted StatefulSet-like kinds. OpenKruise's rules and
// messages, plus what v1alpha1 leaves unchecked: weights 1 to 100 and
// non-empty, valid keys.
func Validate(pps, old *appsv1alpha1.PersistentPodState, others []appsv1alpha1.PersistentPodState, custom []schema.GroupKind) field.ErrorList {
	spec, p := pps.Spec, field.NewPath("spec")
	errs := validateTarget(spec.TargetReference, p.Child("targetRef"), custom)
	if spec.RequiredPersistentTopology == nil && len(spec.PreferredPersistentTopology) == 0 {
		errs = append(errs, field.Required(p, "TopologyConstraint and TopologyPreference cannot be empty at the same time"))
	}
	if r := spec.RequiredPersistentTopology; r != nil {
		errs = append(errs, validateKeys(r.NodeTopologyKeys, p.Child("requiredPersistentTopology", "nodeTopologyKeys"))...)
	}
	for i, t := range spec.PreferredPersistentTopology {
		tp := p.Child("preferredPersistentTopology").Index(i)
		if t.Weight < 1 || t.Weight > 100 {
			errs = append(errs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validateKeys(t.Preference.NodeTopologyKeys, tp.Child("preference", "nodeTopologyKeys"))...)
	}
	for i, a := range spec.PersistentPodAnnotations {
		for _, msg := range validation.IsQualifiedName(a.Key) {
			errs = append(errs, field.Invalid(p.Child("persistentPodAnnotations").Index(i).Child("key"), a.Key, msg))
		}
	}
	if old != nil && old.Spec.TargetReference != spec.TargetReference {
		errs = append(errs, field.Forbidden(p.Child("targetRef"), "targetRef cannot be modified"))
	}
	for _, o := range others {
		if o.Name != pps.Name && o.DeletionTimestamp == nil && sameTarget(o.Spec.TargetReference, spec.TargetReference) {
			errs = append(errs, field.Invalid(p.Child("targetRef"), spec.TargetReference.Name,
				fmt.Sprintf("targetRef is in conflict with other PersistentPodState %s", o.Name)))
		}
	}
	return errs
}

func validateTarget(t appsv1alpha1.TargetReference, p *field.Path, custom []schema.GroupKind) field.ErrorList {
	if t.APIVersion == "" || t.Kind == "" || t.Name == "" {
		return field.ErrorList{field.Required(p, "empty targetRef is not valid for PersistentPodState.")}
	}
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return field.ErrorList{field.Invalid(p.Child("apiVersion"), t.APIVersion, err.Error())}
	}
	if gk := gv.WithKind(t.Kind).GroupKind(); !workloads.IsStatefulSet(gk) && !slices.Contains(custom, gk) {
		return field.ErrorList{field.Invalid(p.Child("kind"), t.Kind, "targetRef.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList")}
	}
	return nil
}

func validateKeys(keys []string, p *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return field.ErrorList{field.Required(p, "at least one node label key")}
	}
	var errs field.ErrorList
	for i, k := range keys {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p.Index(i), k, msg))
		}
	}
	return errs
}

func sameTarget(a, b appsv1alpha1.TargetReference) bool {
	return workloadref.Same(workloads.Target(a), workloads.Target(b))
}
