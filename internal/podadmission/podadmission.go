// Package podadmission is the one place Lifeline admits pods and their
// subresources (binding, eviction, resize, status): one mutating and one
// validating handler, each dispatching in a fixed order to the features
// registered with it, so a cluster has one pod webhook configuration of
// each kind however many features look at pods.
//
// A mutator sees the object as the mutators before it left it; the
// response patches the request's object into the last one's result. A
// validator may refuse; the first refusal is the answer.
package podadmission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The binding and status mutating webhooks fail open: their mutators' work
// is redone by the CloneSet controller (the status webhook's
// matchConditions send it only reports that set a gate's condition). The others come in pairs, one that
// fails closed and a twin (-open) that fails open, on the same path.
// A request that Lifeline cannot judge (no replica answers) is refused
// only where protection was asked for: the fail-closed webhook selects
// the namespaces labelled for it (internal/protection: a budget, a
// guarded CloneSet, a PersistentPodState there), the twin all others.
// While a replica answers, both judge alike. The pod-creation pair
// places StatefulSet pods (PersistentPodState); its matchConditions send
// it only pods named like a StatefulSet's (a controller and a name ending
// in an ordinal; generated names are not set yet at admission). The
// validating pairs, one per resource so that pod creations are not sent
// to them for nothing, judge disruptions; their matchConditions send
// only what could disrupt (a delete of a pod not yet terminating, a
// change of the spec or a new unavailable-pod.kruise.io/ label). System
// namespaces are left out of all. controller-gen has no marker for
// selectors or conditions, so hack/webhookselectors adds them. The
// validating ones have side effects only outside dry runs (the budget's
// status, the hook guard's mark).
// +kubebuilder:webhook:path=/mutate-pod,mutating=true,failurePolicy=ignore,timeoutSeconds=2,sideEffects=None,groups="",resources=pods/binding,verbs=create,versions=v1,name=mpod.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-pod,mutating=true,failurePolicy=ignore,timeoutSeconds=2,sideEffects=None,groups="",resources=pods/status,verbs=update,versions=v1,name=mpodstatus.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-pod,mutating=true,failurePolicy=fail,timeoutSeconds=2,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpodcreate.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-pod,mutating=true,failurePolicy=ignore,timeoutSeconds=2,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpodcreate-open.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-pod,mutating=false,failurePolicy=fail,timeoutSeconds=2,sideEffects=NoneOnDryRun,groups="",resources=pods,verbs=delete,versions=v1,name=vpod.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-pod,mutating=false,failurePolicy=ignore,timeoutSeconds=2,sideEffects=NoneOnDryRun,groups="",resources=pods,verbs=delete,versions=v1,name=vpod-open.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-pod,mutating=false,failurePolicy=fail,timeoutSeconds=2,sideEffects=NoneOnDryRun,groups="",resources=pods/eviction,verbs=create,versions=v1,name=vpodeviction.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-pod,mutating=false,failurePolicy=ignore,timeoutSeconds=2,sideEffects=NoneOnDryRun,groups="",resources=pods/eviction,verbs=create,versions=v1,name=vpodeviction-open.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-pod,mutating=false,failurePolicy=fail,timeoutSeconds=2,sideEffects=NoneOnDryRun,groups="",resources=pods;pods/resize,verbs=update,versions=v1,name=vpodupdate.lifeline.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-pod,mutating=false,failurePolicy=ignore,timeoutSeconds=2,sideEffects=NoneOnDryRun,groups="",resources=pods;pods/resize,verbs=update,versions=v1,name=vpodupdate-open.lifeline.dev,admissionReviewVersions=v1

// SystemNamespaces are left out of the pod webhooks: the cluster's own
// pods must never wait on Lifeline.
var SystemNamespaces = []string{metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Paths of the two pod webhooks.
const (
	MutatePath   = "/mutate-pod"
	ValidatePath = "/validate-pod"
)

// Target is what a feature admits: a pod subresource ("" for the pod
// itself) under one operation.
type Target struct {
	SubResource string
	Operation   admissionv1.Operation
}

// BadObject marks err as the request's fault: the object under admission
// does not decode as what its target is (a made-up review; the API server
// sends only what it has decoded itself). Handle answers it 400, not 500,
// which would read as the webhook broken (found by FuzzPodAdmission: a pod
// whose kind is an object).
func BadObject(err error) error { return badObject{err} }

type badObject struct{ error }

func (b badObject) Unwrap() error { return b.error }

// Mutator changes an object under admission. raw is the object as the
// mutators before it left it; it returns the object as it should be, or
// raw unchanged.
type Mutator interface {
	Mutate(ctx context.Context, req admission.Request, raw []byte) ([]byte, error)
}

// Validator judges an object under admission: a response not Allowed
// refuses it.
type Validator interface {
	Validate(ctx context.Context, req admission.Request) admission.Response
}

// Scope says whether anything in a namespace asks Lifeline to look at its
// pods (internal/podcache): where nothing does (no budget, no Lifeline
// workload, no PersistentPodState), no feature has a say about a pod
// there, and the handlers answer at once, without reading the pod (the
// manager does not cache such pods).
type Scope interface {
	Holds(ctx context.Context, namespace string) bool
}

// outOfScope reports whether no feature looks at pods of req's namespace.
func outOfScope(ctx context.Context, s Scope, req admission.Request) bool {
	return s != nil && !s.Holds(ctx, req.Namespace)
}

type named[T any] struct {
	name    string
	targets []Target
	feature T
}

// Mutating is the pod mutating handler.
type Mutating struct {
	// Scope, when set, lets requests of namespaces no feature looks at
	// through untouched.
	Scope    Scope
	features []named[Mutator]
}

// Register adds a feature, after those already registered, for targets.
func (m *Mutating) Register(name string, f Mutator, targets ...Target) {
	m.features = append(m.features, named[Mutator]{name: name, targets: targets, feature: f})
}

// Handle runs every feature registered for the request's target, in order.
func (m *Mutating) Handle(ctx context.Context, req admission.Request) admission.Response {
	if outOfScope(ctx, m.Scope, req) {
		return admission.Allowed("")
	}
	raw := req.Object.Raw
	for _, f := range m.features {
		if !targets(f.targets, req) {
			continue
		}
		// The API server always sends an object; a request without one
		// (made up, or broken on the way) is the caller's error, a 400,
		// not the webhook's (found by FuzzPodAdmission).
		if !json.Valid(raw) {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s: the request's object is not JSON", f.name))
		}
		out, err := f.feature.Mutate(ctx, req, raw)
		if bad := (badObject{}); errors.As(err, &bad) {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s: %w", f.name, err))
		}
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("%s: %w", f.name, err))
		}
		raw = out
	}
	if string(raw) == string(req.Object.Raw) {
		return admission.Allowed("")
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// Validating is the pod validating handler.
type Validating struct {
	// Scope, when set, allows requests of namespaces no feature looks at.
	Scope    Scope
	features []named[Validator]
}

// Register adds a feature, after those already registered, for targets.
func (v *Validating) Register(name string, f Validator, targets ...Target) {
	v.features = append(v.features, named[Validator]{name: name, targets: targets, feature: f})
}

// Handle asks every feature registered for the request's target, in order,
// and answers with the first refusal, or allows.
func (v *Validating) Handle(ctx context.Context, req admission.Request) admission.Response {
	if outOfScope(ctx, v.Scope, req) {
		return admission.Allowed("")
	}
	for _, f := range v.features {
		if !targets(f.targets, req) {
			continue
		}
		if resp := f.feature.Validate(ctx, req); !resp.Allowed {
			return resp
		}
	}
	return admission.Allowed("")
}

func targets(ts []Target, req admission.Request) bool {
	for _, t := range ts {
		if t.SubResource == req.SubResource && t.Operation == req.Operation {
			return true
		}
	}
	return false
}

// DisruptionTargets are the requests that take a pod out of service: pod
// DELETE and pods/eviction CREATE.
var DisruptionTargets = []Target{
	{Operation: admissionv1.Delete},
	{SubResource: "eviction", Operation: admissionv1.Create},
}

// UpdateTargets are the requests that may take a pod out of service
// without deleting it: a pod UPDATE (an image, an unavailable label) and
// pods/resize UPDATE.
var UpdateTargets = []Target{
	{Operation: admissionv1.Update},
	{SubResource: "resize", Operation: admissionv1.Update},
}

// MatchCondition is one admissionregistration/v1 match condition.
type MatchCondition struct{ Name, Expression string }

// IsEviction reports whether req is a pods/eviction request.
func IsEviction(req admission.Request) bool { return req.SubResource == "eviction" }

// RefuseDisruption answers a refused delete (403) or eviction (429, as
// Kubernetes' eviction API answers a PodDisruptionBudget, so kubectl drain
// retries instead of giving up), with cause DisruptionBudget.
func RefuseDisruption(req admission.Request, message, cause string) admission.Response {
	code, reason := int32(http.StatusForbidden), metav1.StatusReasonForbidden
	if IsEviction(req) {
		code, reason = http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message,
		Details: &metav1.StatusDetails{Name: req.Name, Kind: "pods", Causes: []metav1.StatusCause{{Type: "DisruptionBudget", Message: cause}}},
	}}}
}

// RetryLater answers a request that could not be judged now (a deadline
// passed, a read failed) with 429 and a Retry-After, for every kind of
// request: the API server passes both on, client-go and kubectl drain wait
// and retry, where the 500 of a timed-out or failing webhook would stop a
// drain at once.
func RetryLater(req admission.Request, message string, after time.Duration) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests, Message: message,
		Details: &metav1.StatusDetails{Name: req.Name, Kind: "pods", RetryAfterSeconds: int32(max(1, after/time.Second))},
	}}}
}
