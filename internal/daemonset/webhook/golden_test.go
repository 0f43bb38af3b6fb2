package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// vector is what OpenKruise v1.9.0's webhooks made of one admission of the
// corpus, recorded by hack/kruisevectors daemonset.
type vector struct {
	Name         string          `json:"name"`
	Defaulted    json.RawMessage `json:"defaulted"`
	Code         int32           `json:"code"`
	Message      string          `json:"message"`
	RevisionData string          `json:"revisionData"`
	RevisionHash string          `json:"revisionHash"`
}

type admissionCase struct {
	Name   string          `json:"name"`
	Object json.RawMessage `json:"object"`
	Old    json.RawMessage `json:"old"`
}

// refusedByLifeline are the admissions OpenKruise allows and Lifeline
// refuses on purpose (docs/daemonset.md), with the message it gives.
var refusedByLifeline = map[string]string{
	"burst-not-a-number": `spec.burstReplicas: Invalid value: "abc": a valid percent string must be a numeric string followed by an ending '%'`,
	"hook-label-invalid": `spec.lifecycle.preDelete.labelsHandler: Invalid value: "bad key!"`,
}

// TestAdmissionMatchesOpenKruise: every admission of the corpus, in either
// version, is defaulted as OpenKruise's mutating webhook defaults it, and
// allowed or refused as its validating webhook decides, with the same
// messages and field paths (the listed deviations aside); refusals are
// 422s, where OpenKruise answers a create with a 500. An admitted set's
// revision data is OpenKruise's byte for byte, which is how a migrated
// set's revisions and pods are found.
func TestAdmissionMatchesOpenKruise(t *testing.T) {
	vectors, cases := readVectors(t), readCorpus(t)
	if len(vectors) != len(cases) || len(cases) < 60 {
		t.Fatalf("%d vectors for %d cases; regenerate them with hack/kruisevectors", len(vectors), len(cases))
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	decoder := admission.NewDecoder(scheme)
	for i, v := range vectors {
		c := cases[i]
		t.Run(v.Name, func(t *testing.T) {
			if c.Name != v.Name {
				t.Fatalf("vector %d is %s, corpus has %s; regenerate them", i, v.Name, c.Name)
			}
			defaulted := checkDefaults(t, decoder, c, v)
			resp := (&validator{decoder: decoder}).Handle(context.Background(), request(t, c, defaulted))
			suffix := v.Name[strings.Index(v.Name, "-")+1:]
			if want, ok := refusedByLifeline[suffix]; ok {
				if resp.Allowed || !strings.Contains(resp.Result.Message, want) {
					t.Fatalf("allowed %v, %v; want a refusal saying %q", resp.Allowed, resp.Result, want)
				}
				return
			}
			switch {
			case v.Code == 200 && !resp.Allowed:
				t.Fatalf("OpenKruise allows it; Lifeline: %s", resp.Result.Message)
			case v.Code != 200 && resp.Allowed:
				t.Fatalf("OpenKruise refuses it (%s); Lifeline allows it", v.Message)
			case v.Code != 200:
				want := `DaemonSet.apps.kruise.io "` + nameOf(t, c.Object) + `" is invalid: ` + v.Message
				if resp.Result.Code != 422 || valuesAside(resp.Result.Message) != valuesAside(want) {
					t.Fatalf("answer %d %s\nwant 422 %s", resp.Result.Code, resp.Result.Message, want)
				}
			}
			if v.RevisionData != "" {
				ds := &appsv1beta1.DaemonSet{}
				if err := json.Unmarshal(defaulted, ds); err != nil {
					t.Fatal(err)
				}
				data, err := revision.TemplateData(&ds.Spec.Template)
				if err != nil {
					t.Fatal(err)
				}
				if string(data) != v.RevisionData {
					t.Errorf("revision data\n got %s\nwant %s", data, v.RevisionData)
				}
			}
		})
	}
}

// rejectedValue is the value an error message quotes. Each side renders it
// with its own apimachinery (v0.36 renders JSON, OpenKruise's v0.32 Go
// syntax), so messages are compared with the values left out.
var rejectedValue = regexp.MustCompile(`(Invalid value|Unsupported value): (?:map\[string\]string\{[^}]*\}|intstr\.IntOrString\{[^}]*\}|[\w.]*\{.*?\}|"[^"]*"|-?\d+): `)

func valuesAside(msg string) string { return rejectedValue.ReplaceAllString(msg, "$1: …: ") }

// checkDefaults applies Lifeline's defaults in the request's version and
// compares the spec with OpenKruise's; it returns the defaulted JSON.
func checkDefaults(t *testing.T, decoder admission.Decoder, c admissionCase, v vector) []byte {
	t.Helper()
	var ours runtime.Object
	if strings.HasSuffix(apiVersionOf(t, c.Object), "/v1alpha1") {
		ds := &appsv1alpha1.DaemonSet{}
		mustUnmarshal(t, c.Object, ds)
		if err := DefaultV1alpha1(ds); err != nil {
			t.Fatal(err)
		}
		want := &appsv1alpha1.DaemonSet{}
		mustUnmarshal(t, v.Defaulted, want)
		if !apiequality.Semantic.DeepEqual(ds.Spec, want.Spec) {
			t.Errorf("defaults differ from OpenKruise's:\n%s", diff.Diff(want.Spec, ds.Spec))
		}
		ours = ds
	} else {
		ds := &appsv1beta1.DaemonSet{}
		mustUnmarshal(t, c.Object, ds)
		Default(ds)
		want := &appsv1beta1.DaemonSet{}
		mustUnmarshal(t, v.Defaulted, want)
		if !apiequality.Semantic.DeepEqual(ds.Spec, want.Spec) {
			t.Errorf("defaults differ from OpenKruise's:\n%s", diff.Diff(want.Spec, ds.Spec))
		}
		ours = ds
	}
	data, err := json.Marshal(ours)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func request(t *testing.T, c admissionCase, object []byte) admission.Request {
	t.Helper()
	version := strings.TrimPrefix(apiVersionOf(t, c.Object), "apps.kruise.io/")
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: "apps.kruise.io", Version: version, Kind: "DaemonSet"},
		Resource:  metav1.GroupVersionResource{Group: "apps.kruise.io", Version: version, Resource: "daemonsets"},
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: object},
	}}
	if c.Old != nil {
		req.Operation, req.OldObject = admissionv1.Update, runtime.RawExtension{Raw: c.Old}
	}
	return req
}

func apiVersionOf(t *testing.T, raw []byte) string {
	var head metav1.TypeMeta
	mustUnmarshal(t, raw, &head)
	return head.APIVersion
}

func apiVersionOfRaw(raw []byte) string {
	var head metav1.TypeMeta
	_ = json.Unmarshal(raw, &head)
	return head.APIVersion
}

func nameOf(t *testing.T, raw []byte) string {
	var head metav1.PartialObjectMetadata
	mustUnmarshal(t, raw, &head)
	return head.Name
}

func mustUnmarshal(t testing.TB, data []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

func readVectors(t *testing.T) []vector {
	t.Helper()
	data, err := os.ReadFile("testdata/kruise-v1.9.0.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []vector
	mustUnmarshal(t, data, &vectors)
	return vectors
}

func readCorpus(t testing.TB) []admissionCase {
	t.Helper()
	data, err := os.ReadFile("testdata/corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []admissionCase
	for {
		var c admissionCase
		if err := decoder.Decode(&c); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if c.Name != "" {
			out = append(out, c)
		}
	}
}
