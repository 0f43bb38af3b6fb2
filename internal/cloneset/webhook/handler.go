package webhook

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/lifeline-k8s/lifeline/internal/conversion"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// Paths of the CloneSet webhooks, OpenKruise's.
const (
	MutatePath   = "/mutate-apps-kruise-io-cloneset"
	ValidatePath = "/validate-apps-kruise-io-cloneset"
)

// +kubebuilder:webhook:path=/mutate-apps-kruise-io-cloneset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=clonesets,verbs=create;update,versions=v1alpha1,name=mcloneset.kb.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-apps-kruise-io-cloneset,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=clonesets,verbs=create;update,versions=v1alpha1,name=vcloneset.kb.io,admissionReviewVersions=v1

// Register serves the CloneSet webhooks on server. pods reads the pods
// named in podsToDelete.
func Register(server webhook.Server, decoder admission.Decoder, pods client.Reader) {
	server.Register(MutatePath, &webhook.Admission{Handler: &defaulter{decoder: decoder}})
	server.Register(ValidatePath, &webhook.Admission{Handler: &validator{decoder: decoder, pods: podReader{pods}}})

}

type defaulter struct{ decoder admission.Decoder }

func (d *defaulter) Handle(ctx context.Context, req admission.Request) admission.Response {
	cs := &appsv1alpha1.CloneSet{}
	if err := d.decoder.Decode(req, cs); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *appsv1alpha1.CloneSet
	if req.Operation == admissionv1.Update {
		old = &appsv1alpha1.CloneSet{}
		if err := d.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	Default(cs, old)
	defaulted, err := json.Marshal(cs)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, defaulted)
}

type validator struct {
	decoder admission.Decoder
	pods    PodGetter
}

func (v *validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	cs := &appsv1alpha1.CloneSet{}
	if err := v.decoder.Decode(req, cs); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var errs field.ErrorList
	switch req.Operation {
	case admissionv1.Create:
		errs = ValidateCreate(ctx, v.pods, cs)
	case admissionv1.Update:
		old := &appsv1alpha1.CloneSet{}
		if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		errs = ValidateUpdate(ctx, v.pods, cs, old)
	}
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	if conversion.RequestedInHub(req.RequestKind) {
		errs = conversion.HubPaths(conversion.CloneSet, errs)
	}
	// A 422 with a cause per field, as the API server's own validation
	// answers, so clients read the field paths without parsing messages.
	status := apierrors.NewInvalid(appsv1alpha1.GroupVersion.WithKind("CloneSet").GroupKind(), cs.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

type podReader struct{ client.Reader }

func (r podReader) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	return pod, r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod)
}
