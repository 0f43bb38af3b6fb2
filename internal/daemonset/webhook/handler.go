package webhook

import (
	"context"
	"encoding/json"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
)

// Paths of the Advanced DaemonSet webhooks, OpenKruise's.
const (
	MutatePath   = "/mutate-apps-kruise-io-daemonset"
	ValidatePath = "/validate-apps-kruise-io-daemonset"
)

// The webhooks see each request in its own version, as OpenKruise's do: a
// v1alpha1 Surging set is defaulted to surge before conversion would make
// it Standard.
// +kubebuilder:webhook:path=/mutate-apps-kruise-io-daemonset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=daemonsets,verbs=create;update,versions=v1alpha1;v1beta1,name=mdaemonset.kb.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-apps-kruise-io-daemonset,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=daemonsets,verbs=create;update,versions=v1alpha1;v1beta1,name=vdaemonset.kb.io,admissionReviewVersions=v1

// Register serves the Advanced DaemonSet webhooks on server.
func Register(server webhook.Server, decoder admission.Decoder) {
	server.Register(MutatePath, &webhook.Admission{Handler: &defaulter{decoder: decoder}})
	server.Register(ValidatePath, &webhook.Admission{Handler: &validator{decoder: decoder}})
}

type defaulter struct{ decoder admission.Decoder }

func (d *defaulter) Handle(_ context.Context, req admission.Request) admission.Response {
	var obj runtime.Object
	if req.Kind.Version == appsv1alpha1.GroupVersion.Version {
		ds := &appsv1alpha1.DaemonSet{}
		if err := d.decoder.Decode(req, ds); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if err := DefaultV1alpha1(ds); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		obj = ds
	} else {
		ds := &appsv1beta1.DaemonSet{}
		if err := d.decoder.Decode(req, ds); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		Default(ds)
		obj = ds
	}
	defaulted, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, defaulted)
}

type validator struct{ decoder admission.Decoder }

func (v *validator) Handle(_ context.Context, req admission.Request) admission.Response {
	ds, old, version, err := decode(v.decoder, req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var errs field.ErrorList
	if old == nil {
		errs = ValidateCreate(ds, version)
	} else {
		errs = ValidateUpdate(ds, old, version)
	}
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	// A 422 with a cause per field, on create too (OpenKruise answers a
	// create with a 500).
	status := apierrors.NewInvalid(appsv1beta1.GroupVersion.WithKind("DaemonSet").GroupKind(), ds.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// decode reads the request's set, and on an update the stored one, as
// v1beta1, with the version the request came in.
func decode(decoder admission.Decoder, req admission.Request) (ds, old *appsv1beta1.DaemonSet, v Version, err error) {
	if req.Kind.Version != appsv1alpha1.GroupVersion.Version {
		ds = &appsv1beta1.DaemonSet{}
		if err := decoder.Decode(req, ds); err != nil {
			return nil, nil, v, err
		}
		if req.Operation == admissionv1.Update {
			old = &appsv1beta1.DaemonSet{}
			if err := decoder.DecodeRaw(req.OldObject, old); err != nil {
				return nil, nil, v, err
			}
		}
		return ds, old, v, nil
	}
	v.Alpha = true
	alpha := &appsv1alpha1.DaemonSet{}
	if err := decoder.Decode(req, alpha); err != nil {
		return nil, nil, v, err
	}
	if ru := alpha.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		v.RollingUpdateType = string(ru.Type)
	}
	if ds, err = toHub(alpha); err != nil {
		return nil, nil, v, err
	}
	if req.Operation == admissionv1.Update {
		oldAlpha := &appsv1alpha1.DaemonSet{}
		if err := decoder.DecodeRaw(req.OldObject, oldAlpha); err != nil {
			return nil, nil, v, err
		}
		if old, err = toHub(oldAlpha); err != nil {
			return nil, nil, v, err
		}
	}
	return ds, old, v, nil
}

func toHub(alpha *appsv1alpha1.DaemonSet) (*appsv1beta1.DaemonSet, error) {
	hub := &appsv1beta1.DaemonSet{}
	return hub, conversion.DaemonSetToHub(alpha, hub)
}
