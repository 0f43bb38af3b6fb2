package revision_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/webhook"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// vector is what OpenKruise v1.9.0 made of one CloneSet of the corpus,
// recorded by hack/kruisevectors.
type vector struct {
	Name                    string          `json:"name"`
	Stored                  json.RawMessage `json:"stored"`
	RevisionName            string          `json:"revisionName"`
	RevisionHash            string          `json:"revisionHash"`
	RevisionData            string          `json:"revisionData"`
	VolumeClaimTemplateHash string          `json:"volumeClaimTemplateHash"`
}

// TestRevisionsMatchOpenKruiseGoldenVectors: for every CloneSet of the
// corpus, Lifeline names the same revision as OpenKruise v1.9.0, both for
// the manifest admitted through Lifeline's own webhook and for the object
// as OpenKruise stored it (a CloneSet migrated from OpenKruise), so no pod
// is rolled on migration.
func TestRevisionsMatchOpenKruiseGoldenVectors(t *testing.T) {
	var vectors []vector
	data, err := os.ReadFile("testdata/kruise-v1.9.0.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	corpus := readCorpus(t)
	if len(vectors) != len(corpus) || len(corpus) < 25 {
		t.Fatalf("%d vectors for %d CloneSets; regenerate them with hack/kruisevectors", len(vectors), len(corpus))
	}
	for i, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			if corpus[i].Name != v.Name {
				t.Fatalf("vector %d is %s, corpus has %s; regenerate them", i, v.Name, corpus[i].Name)
			}
			admitted := corpus[i].DeepCopy()
			webhook.Default(admitted, nil)
			check(t, "admitted by Lifeline", admitted, v)

			stored := &appsv1alpha1.CloneSet{}
			if err := json.Unmarshal(v.Stored, stored); err != nil {
				t.Fatal(err)
			}
			check(t, "stored by OpenKruise", stored, v)
		})
	}
}

func check(t *testing.T, how string, cs *appsv1alpha1.CloneSet, v vector) {
	t.Helper()
	cr, err := revision.New(cs, ptr.To[int32](0), 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(cr.Data.Raw) != v.RevisionData {
		t.Errorf("%s: revision data\n got %s\nwant %s", how, cr.Data.Raw, v.RevisionData)
	}
	if cr.Name != v.RevisionName || cr.Labels["controller.kubernetes.io/hash"] != v.RevisionHash {
		t.Errorf("%s: revision %s (hash label %q), want %s (%s)", how, cr.Name, cr.Labels["controller.kubernetes.io/hash"], v.RevisionName, v.RevisionHash)
	}
	if got := cr.Annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation]; got != v.VolumeClaimTemplateHash {
		t.Errorf("%s: volumeClaimTemplates hash %q, want %q", how, got, v.VolumeClaimTemplateHash)
	}
}

func readCorpus(t *testing.T) []*appsv1alpha1.CloneSet {
	t.Helper()
	data, err := os.ReadFile("testdata/corpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*appsv1alpha1.CloneSet
	for {
		cs := &appsv1alpha1.CloneSet{}
		if err := decoder.Decode(cs); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, cs)
	}
}
