// Package admissiontest fuzzes the admission webhooks as the API server
// calls them: an AdmissionReview posted to each path a package registers.
// Whatever the bytes, a webhook must answer (no panic, recovered or not),
// and a refusal must be a 4xx with a message: a 5xx tells the API server
// the webhook broke, which under failurePolicy Fail blocks the request
// with no reason a user can act on.
package admissiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Server collects the handlers a package registers.
type Server struct{ Handlers map[string]http.Handler }

var _ webhook.Server = &Server{}

func (s *Server) NeedLeaderElection() bool { return false }
func (s *Server) Register(path string, h http.Handler) {
	if s.Handlers == nil {
		s.Handlers = map[string]http.Handler{}
	}
	s.Handlers[path] = h
}
func (s *Server) Start(context.Context) error     { return nil }
func (s *Server) StartedChecker() healthz.Checker { return healthz.Ping }
func (s *Server) WebhookMux() *http.ServeMux      { return http.NewServeMux() }
func (s *Server) paths() []string {
	var out []string
	for p := range s.Handlers {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Review is an AdmissionReview of obj (and old, for an update), JSON, as
// the API server sends it for resource in group/version: a seed for the
// fuzzer.
func Review(group, version, resource, kind string, op admissionv1.Operation, obj, old []byte) []byte {
	req := &admissionv1.AdmissionRequest{
		UID:       "fuzz",
		Kind:      metav1.GroupVersionKind{Group: group, Version: version, Kind: kind},
		Resource:  metav1.GroupVersionResource{Group: group, Version: version, Resource: resource},
		Operation: op,
		Namespace: "ns",
		Name:      "name",
	}
	req.Object.Raw, req.OldObject.Raw = obj, old
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req}
	data, _ := json.Marshal(review)
	return data
}

// Check posts review to every handler s holds and fails t on a panic, on a
// response that is not an AdmissionReview, and on a refusal that is not a
// 4xx with a message.
func Check(t *testing.T, s *Server, review []byte) {
	t.Helper()
	for _, path := range s.paths() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(review))
		req.Header.Set("Content-Type", "application/json")
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s panicked on %q: %v", path, review, r)
				}
			}()
			s.Handlers[path].ServeHTTP(rec, req)
		}()
		out := admissionv1.AdmissionReview{}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("%s answered %d %q to %q: not an AdmissionReview (%v)", path, rec.Code, rec.Body.String(), review, err)
		}
		r := out.Response
		if r.Allowed {
			continue
		}
		if r.Result == nil || r.Result.Code < 400 || r.Result.Code >= 500 || r.Result.Message == "" {
			t.Fatalf("%s refused %q with %+v: want a 4xx with a message", path, review, r.Result)
		}
		if strings.Contains(r.Result.Message, "panic") {
			t.Fatalf("%s recovered a panic on %q: %s", path, review, r.Result.Message)
		}
	}
}

// Seed adds to f, for each object of kind in the YAML documents of path,
// a create review and an update review (the object over itself) for
// resource in its group and version.
func Seed(f *testing.F, path, kind, resource string) {
	f.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	n := 0
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			f.Fatal(err)
		}
		var head metav1.TypeMeta
		if json.Unmarshal(raw, &head) != nil || head.Kind != kind {
			continue
		}
		gv, err := schema.ParseGroupVersion(head.APIVersion)
		if err != nil {
			continue
		}
		f.Add(Review(gv.Group, gv.Version, resource, kind, admissionv1.Create, raw, nil))
		f.Add(Review(gv.Group, gv.Version, resource, kind, admissionv1.Update, raw, raw))
		n++
	}
	if n == 0 {
		f.Fatalf("no %s in %s", kind, path)
	}
}
