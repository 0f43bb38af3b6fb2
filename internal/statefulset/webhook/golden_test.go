package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// vector is what OpenKruise v1.9.0 made of one set of the corpus, recorded
// by hack/kruisevectors statefulset.
type vector struct {
	Name         string          `json:"name"`
	Stored       json.RawMessage `json:"stored"`
	RevisionName string          `json:"revisionName"`
	RevisionHash string          `json:"revisionHash"`
	RevisionData string          `json:"revisionData"`
}

// TestDefaultsAndRevisionsMatchOpenKruise: every set of the corpus, admitted
// through Lifeline's webhook, is stored as OpenKruise's webhook stores it,
// and names the revision OpenKruise's controller names (also when read as
// OpenKruise stored it: a set migrated from OpenKruise), so a migrated set
// rolls no pod.
func TestDefaultsAndRevisionsMatchOpenKruise(t *testing.T) {
	var vectors []vector
	data, err := os.ReadFile("testdata/kruise-v1.9.0.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	corpus := readCorpus(t)
	if len(vectors) != len(corpus) || len(corpus) < 30 {
		t.Fatalf("%d vectors for %d sets; regenerate them with hack/kruisevectors", len(vectors), len(corpus))
	}
	for i, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			if corpus[i].Name != v.Name {
				t.Fatalf("vector %d is %s, corpus has %s; regenerate them", i, v.Name, corpus[i].Name)
			}
			stored := &appsv1beta1.StatefulSet{}
			if err := json.Unmarshal(v.Stored, stored); err != nil {
				t.Fatal(err)
			}
			admitted := corpus[i].DeepCopy()
			Default(admitted, nil, Options{AutoDeletePVC: true})
			if !apiequality.Semantic.DeepEqual(admitted.Spec, stored.Spec) {
				t.Errorf("defaults differ from OpenKruise's:\n%s", diff.Diff(stored.Spec, admitted.Spec))
			}
			for how, sts := range map[string]*appsv1beta1.StatefulSet{"admitted by Lifeline": admitted, "stored by OpenKruise": stored} {
				data, err := revision.TemplateData(&sts.Spec.Template)
				if err != nil {
					t.Fatal(err)
				}
				hash := revision.Hash(data, ptr.To[int32](0))
				if string(data) != v.RevisionData {
					t.Errorf("%s: revision data\n got %s\nwant %s", how, data, v.RevisionData)
				}
				if name := revision.Name(sts.Name, hash); name != v.RevisionName || hash != v.RevisionHash {
					t.Errorf("%s: revision %s (hash %s), want %s (%s)", how, name, hash, v.RevisionName, v.RevisionHash)
				}
			}
		})
	}
}

func readCorpus(t *testing.T) []*appsv1beta1.StatefulSet {
	t.Helper()
	data, err := os.ReadFile("testdata/corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*appsv1beta1.StatefulSet
	for {
		sts := &appsv1beta1.StatefulSet{}
		if err := decoder.Decode(sts); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, sts)
	}
}
