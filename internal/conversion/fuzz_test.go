package conversion

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// FuzzConversion posts arbitrary ConversionReviews, seeded with the
// corpus's objects of every kind asked for in the other version, to the
// conversion webhook: it must answer every one with a ConversionReview,
// never panic, and convert every object it was given or say why not.
func FuzzConversion(f *testing.F) {
	data, err := os.ReadFile("testdata/corpus.yaml")
	if err != nil {
		f.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			f.Fatal(err)
		}
		var head metav1.TypeMeta
		if json.Unmarshal(raw, &head) != nil {
			continue
		}
		other := strings.Replace(head.APIVersion, "v1alpha1", "v1beta1", 1)
		if other == head.APIVersion {
			other = strings.Replace(head.APIVersion, "v1beta1", "v1alpha1", 1)
		}
		review := apiextensionsv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
			Request: &apiextensionsv1.ConversionRequest{UID: "fuzz", DesiredAPIVersion: other, Objects: []runtime.RawExtension{{Raw: raw}}}}
		seed, _ := json.Marshal(review)
		f.Add(seed)
	}
	h, err := Handler(scheme, CloneSet, PersistentPodState, PodUnavailableBudget, StatefulSet, DaemonSet)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, review []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(review))
		req.Header.Set("Content-Type", "application/json")
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("the conversion webhook panicked on %q: %v", review, r)
				}
			}()
			h.ServeHTTP(rec, req)
		}()
		if rec.Code >= 500 {
			t.Fatalf("answered %d %q to %q", rec.Code, rec.Body.String(), review)
		}
		out := apiextensionsv1.ConversionReview{}
		if rec.Code == http.StatusOK && (json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.Response == nil) {
			t.Fatalf("answered %q to %q: not a ConversionReview", rec.Body.String(), review)
		}
		if out.Response != nil && out.Response.Result.Status == metav1.StatusFailure && out.Response.Result.Message == "" {
			t.Fatalf("a failed conversion of %q says nothing", review)
		}
	})
}
