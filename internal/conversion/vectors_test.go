package conversion

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// vector is one entry of testdata/kruise-v1.9.0.json, which
// hack/kruisevectors records by running OpenKruise v1.9.0's own conversion
// code on testdata/corpus.yaml.
type vector struct {
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
}

// deviations are the vectors where Lifeline differs from OpenKruise's
// conversion on purpose (docs/compatibility.md), with what it does instead.
var deviations = map[string]string{
	// A v1beta1 budget without the fields keeps its annotations in
	// v1alpha1, as OpenKruise's controller falls back to them.
	"b-unset-fields-clear-annotations": `{"kruise.io/pub-protect-operations":"DELETE","pub.kruise.io/protect-total-replicas":"7"}`,
}

// TestConversionMatchesOpenKruise converts every object of the corpus and
// compares the result with OpenKruise's, field by field. The differences
// allowed are the stash annotation (Lifeline's repair), removed before
// comparing (TestRoundTrip shows what it keeps), and the annotations of
// the listed deviations, which must be what the list says.
func TestConversionMatchesOpenKruise(t *testing.T) {
	data, err := os.ReadFile("testdata/kruise-v1.9.0.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []vector
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) < 19 {
		t.Fatalf("%d vectors, want the whole corpus", len(vectors))
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			got, err := convertJSON(v.Input)
			if v.Error != "" {
				if err == nil {
					t.Fatalf("converted to %s; OpenKruise refused: %s", got, v.Error)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenKruise converts it; Lifeline: %v", err)
			}
			var want, have map[string]any
			if err := json.Unmarshal(v.Output, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &have); err != nil {
				t.Fatal(err)
			}
			dropStash(have)
			if annotations, ok := deviations[v.Name]; ok {
				var deviated map[string]any
				if err := json.Unmarshal([]byte(annotations), &deviated); err != nil {
					t.Fatal(err)
				}
				meta := have["metadata"].(map[string]any)
				if d := jsonDiff(".metadata.annotations", deviated, meta["annotations"]); len(d) > 0 {
					t.Errorf("the listed deviation is not what Lifeline does: %v", d)
				}
				delete(meta, "annotations")
				if m, ok := want["metadata"].(map[string]any); ok {
					delete(m, "annotations")
				}
			}
			normalize(want)
			normalize(have)
			for _, d := range jsonDiff("", want, have) {
				t.Errorf("differs from OpenKruise's conversion: %s", d)
			}
		})
	}
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme,
		policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// convertJSON decodes raw as the kind and version it names, converts it to
// the other version and encodes the result.
func convertJSON(raw []byte) ([]byte, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, err
	}
	gvk := tm.GroupVersionKind()
	src, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, src); err != nil {
		return nil, err
	}
	other := schema.GroupVersion{Group: gvk.Group, Version: "v1beta1"}
	if gvk.Version == "v1beta1" {
		other.Version = "v1alpha1"
	}
	dst, err := scheme.New(other.WithKind(gvk.Kind))
	if err != nil {
		return nil, err
	}
	if err := Convert(src, dst); err != nil {
		return nil, err
	}
	dst.GetObjectKind().SetGroupVersionKind(other.WithKind(gvk.Kind))
	return json.Marshal(dst)
}

// normalize removes what differs only in encoding: the type (which the
// webhook sets, and OpenKruise's CloneSet conversion leaves out), the null
// creationTimestamps of OpenKruise's older apimachinery, and the empty
// annotation map its budget conversion leaves.
func normalize(obj map[string]any) {
	delete(obj, "apiVersion")
	delete(obj, "kind")
	dropNullTimestamps(obj)
	dropEmpty(obj, "metadata", "annotations")
}

func dropNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		if ts, ok := v["creationTimestamp"]; ok && ts == nil {
			delete(v, "creationTimestamp")
		}
		for _, e := range v {
			dropNullTimestamps(e)
		}
	case []any:
		for _, e := range v {
			dropNullTimestamps(e)
		}
	}
}

// jsonDiff lists the JSON paths where a (OpenKruise's) and b (Lifeline's) differ.
func jsonDiff(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if reflect.DeepEqual(a, b) {
			return nil
		}
		return []string{fmt.Sprintf("%s: OpenKruise %v, Lifeline %v", path, a, b)}
	}
	var out []string
	for k := range am {
		out = append(out, jsonDiff(path+"."+k, am[k], bm[k])...)
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			out = append(out, jsonDiff(path+"."+k, nil, bm[k])...)
		}
	}
	return out
}

func dropStash(obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	delete(annotations, StashAnnotation)
}

func dropEmpty(obj map[string]any, path ...string) {
	for _, p := range path[:len(path)-1] {
		obj, _ = obj[p].(map[string]any)
	}
	last := path[len(path)-1]
	if m, ok := obj[last].(map[string]any); ok && len(m) == 0 {
		delete(obj, last)
	}
}
