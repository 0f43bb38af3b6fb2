package webhook

import (
	"context"
	"encoding/json"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// Paths of the Advanced StatefulSet webhooks, OpenKruise's.
const (
	MutatePath   = "/mutate-apps-kruise-io-statefulset"
	ValidatePath = "/validate-apps-kruise-io-statefulset"
)

// The webhooks are registered for v1beta1, the version every field has:
// the API server converts a v1alpha1 request (matchPolicy Equivalent), so
// both versions get the same defaults and checks with the same paths.
// +kubebuilder:webhook:path=/mutate-apps-kruise-io-statefulset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=statefulsets,verbs=create;update,versions=v1beta1,name=mstatefulset.kb.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-apps-kruise-io-statefulset,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=statefulsets,verbs=create;update,versions=v1beta1,name=vstatefulset.kb.io,admissionReviewVersions=v1

// Register serves the Advanced StatefulSet webhooks on server.
func Register(server webhook.Server, decoder admission.Decoder, o Options) {
	server.Register(MutatePath, &webhook.Admission{Handler: &defaulter{decoder: decoder, options: o}})
	server.Register(ValidatePath, &webhook.Admission{Handler: &validator{decoder: decoder}})
}

type defaulter struct {
	decoder admission.Decoder
	options Options
}

func (d *defaulter) Handle(_ context.Context, req admission.Request) admission.Response {
	sts, old, err := decode(d.decoder, req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	Default(sts, old, d.options)
	defaulted, err := json.Marshal(sts)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, defaulted)
}

type validator struct{ decoder admission.Decoder }

func (v *validator) Handle(_ context.Context, req admission.Request) admission.Response {
	sts, old, err := decode(v.decoder, req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var errs field.ErrorList
	if old == nil {
		errs = ValidateCreate(sts)
	} else {
		errs = ValidateUpdate(sts, old)
	}
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	// A 422 with a cause per field, as the API server's own validation
	// answers.
	status := apierrors.NewInvalid(appsv1beta1.GroupVersion.WithKind("StatefulSet").GroupKind(), sts.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// decode reads the request's set, and on an update the stored one.
func decode(decoder admission.Decoder, req admission.Request) (sts, old *appsv1beta1.StatefulSet, err error) {
	sts = &appsv1beta1.StatefulSet{}
	if err := decoder.Decode(req, sts); err != nil {
		return nil, nil, err
	}
	if req.Operation == admissionv1.Update {
		old = &appsv1beta1.StatefulSet{}
		if err := decoder.DecodeRaw(req.OldObject, old); err != nil {
			return nil, nil, err
		}
	}
	return sts, old, nil
}
