package podadmission

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// addLabel is a mutator that adds a label, recording the labels it saw.
type addLabel struct {
	key  string
	seen *[]string
}

func (a addLabel) Mutate(_ context.Context, _ admission.Request, raw []byte) ([]byte, error) {
	var obj struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels,omitempty"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	for k := range obj.Metadata.Labels {
		*a.seen = append(*a.seen, a.key+" saw "+k)
	}
	if obj.Metadata.Labels == nil {
		obj.Metadata.Labels = map[string]string{}
	}
	obj.Metadata.Labels[a.key] = "x"
	return json.Marshal(obj)
}

type verdict struct {
	allow bool
	calls *int
}

func (v verdict) Validate(context.Context, admission.Request) admission.Response {
	*v.calls++
	if v.allow {
		return admission.Allowed("")
	}
	return admission.Denied("no")
}

var bindCreate = Target{SubResource: "binding", Operation: admissionv1.Create}

func request(sub string, op admissionv1.Operation) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{SubResource: sub, Operation: op,
		Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"web-a"}}`)}}}
}

// Mutators run in the order they registered, each on the object the one
// before left, and only for their targets; the response patches the whole.
func TestMutatingDispatchesInOrder(t *testing.T) {
	var seen []string
	m := &Mutating{}
	m.Register("first", addLabel{"a", &seen}, bindCreate)
	m.Register("second", addLabel{"b", &seen}, bindCreate)
	m.Register("pods only", addLabel{"c", &seen}, Target{Operation: admissionv1.Create})
	resp := m.Handle(context.Background(), request("binding", admissionv1.Create))
	if !resp.Allowed || len(resp.Patches) != 1 || len(seen) != 1 || seen[0] != "b saw a" {
		t.Fatalf("response %+v, seen %v", resp, seen)
	}
	if resp := m.Handle(context.Background(), request("eviction", admissionv1.Create)); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("no feature for evictions, yet %+v", resp)
	}
}

// The first refusal answers; later validators are not asked.
func TestValidatingAnswersWithTheFirstRefusal(t *testing.T) {
	var calls int
	v := &Validating{}
	v.Register("allows", verdict{true, &calls}, bindCreate)
	v.Register("refuses", verdict{false, &calls}, bindCreate)
	v.Register("never asked", verdict{true, &calls}, bindCreate)
	if resp := v.Handle(context.Background(), request("binding", admissionv1.Create)); resp.Allowed || calls != 2 {
		t.Errorf("allowed %v after %d calls", resp.Allowed, calls)
	}
	if resp := v.Handle(context.Background(), request("", admissionv1.Delete)); !resp.Allowed {
		t.Error("a request no feature registered for was refused")
	}
}

type failing struct{ err error }

func (f failing) Mutate(context.Context, admission.Request, []byte) ([]byte, error) {
	return nil, f.err
}

// An object that does not decode is the caller's error (400); any other
// failure is the webhook's (500), which the API server reports as such.
func TestMutatingAnswersBadObjectsWith400(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int32
	}{
		{BadObject(errors.New("json: cannot unmarshal object into kind")), http.StatusBadRequest},
		{errors.New("cache not synced"), http.StatusInternalServerError},
	} {
		m := &Mutating{}
		m.Register("f", failing{c.err}, Target{Operation: admissionv1.Create})
		resp := m.Handle(context.Background(), request("", admissionv1.Create))
		if resp.Allowed || resp.Result.Code != c.code {
			t.Errorf("%v: answered %+v, want %d", c.err, resp.Result, c.code)
		}
	}
}

// heldNamespaces is a Scope holding the namespaces listed.
type heldNamespaces map[string]bool

func (h heldNamespaces) Holds(_ context.Context, ns string) bool { return h[ns] }

func TestNamespacesOutOfScopeAreLetThroughUnjudged(t *testing.T) {
	calls := 0
	v := &Validating{Scope: heldNamespaces{"guarded": true}}
	v.Register("refuses", verdict{calls: &calls}, DisruptionTargets...)
	var seen []string
	m := &Mutating{Scope: heldNamespaces{"guarded": true}}
	m.Register("labels", addLabel{key: "a", seen: &seen}, bindCreate)

	for ns, judged := range map[string]bool{"guarded": true, "elsewhere": false} {
		req := request("", admissionv1.Delete)
		req.Namespace = ns
		calls = 0
		if got := v.Handle(context.Background(), req); got.Allowed == judged || calls != map[bool]int{true: 1}[judged] {
			t.Errorf("delete in %s: allowed %v after %d calls, want judged %v", ns, got.Allowed, calls, judged)
		}
		bind := request("binding", admissionv1.Create)
		bind.Namespace = ns
		if got := m.Handle(context.Background(), bind); (len(got.Patches) > 0) != judged {
			t.Errorf("bind in %s: patched %v, want %v", ns, got.Patches, judged)
		}
	}
}
