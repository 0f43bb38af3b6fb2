// Command kruisevectors records, for each CloneSet of Lifeline's corpus, what
// OpenKruise v1.9.0 makes of it: the CloneSet its mutating webhook stores
// (defaults applied), and the ControllerRevision it names for it (name,
// data, volumeClaimTemplates hash). Lifeline's revision tests compare their
// own results with these. Run from this folder:
//
//	go run . ../../internal/revision/testdata/corpus.yaml ../../internal/revision/testdata/kruise-v1.9.0.json
//
// With "conversion" first, it records instead what OpenKruise's conversion
// code makes of each object (CloneSet, PodUnavailableBudget,
// PersistentPodState, StatefulSet, DaemonSet, either version) in the other
// version:
//
//	go run . conversion ../../internal/conversion/testdata/corpus.yaml ../../internal/conversion/testdata/kruise-v1.9.0.json
//
// With "statefulset" first, it records for each v1beta1 Advanced
// StatefulSet what OpenKruise's webhook stores on CREATE and the revision
// its controller names:
//
//	go run . statefulset ../../internal/statefulset/webhook/testdata/corpus.yaml ../../internal/statefulset/webhook/testdata/kruise-v1.9.0.json
//
// With "daemonset" first, it records for each Advanced DaemonSet admission
// (either version, create or update) the defaults OpenKruise's mutating
// webhook applies, its validating webhook's answer, and for an admitted
// v1beta1 set the revision data and hash its controller names:
//
//	go run . daemonset ../../internal/daemonset/webhook/testdata/corpus.yaml ../../internal/daemonset/webhook/testdata/kruise-v1.9.0.json
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/openkruise/kruise/apis/apps/defaults"
	appsv1alpha1 "github.com/openkruise/kruise/apis/apps/v1alpha1"
	appsv1beta1 "github.com/openkruise/kruise/apis/apps/v1beta1"
	"github.com/openkruise/kruise/pkg/controller/cloneset/revision"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// Vector is what OpenKruise made of one CloneSet.
type Vector struct {
	Name string `json:"name"`
	// Stored is the CloneSet as OpenKruise's mutating webhook leaves it
	// (encoded by its apimachinery, v0.32).
	Stored json.RawMessage `json:"stored"`
	// RevisionName, RevisionHash and RevisionData are those of the
	// revision at collision count 0.
	RevisionName string `json:"revisionName"`
	RevisionHash string `json:"revisionHash"`
	RevisionData string `json:"revisionData"`
	// VolumeClaimTemplateHash is the revision's
	// kruise.io/cloneset-volumeclaimtemplate-hash annotation.
	VolumeClaimTemplateHash string `json:"volumeClaimTemplateHash"`
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "conversion" {
		if err := runConversion(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "kruisevectors:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "daemonset" {
		if err := runDaemonSets(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "kruisevectors:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "statefulset" {
		if err := runStatefulSets(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "kruisevectors:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: kruisevectors [conversion|statefulset|daemonset] CORPUS.yaml OUT.json")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "kruisevectors:", err)
		os.Exit(1)
	}
}

func run(corpus, out string) error {
	// OpenKruise's manager registers its types with client-go's scheme,
	// whose codec its revision control encodes CloneSets with.
	if err := appsv1beta1.AddToScheme(scheme.Scheme); err != nil {
		return err
	}
	if err := appsv1alpha1.AddToScheme(scheme.Scheme); err != nil {
		return err
	}
	data, err := os.ReadFile(corpus)
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var vectors []Vector
	for {
		cs := &appsv1alpha1.CloneSet{}
		if err := decoder.Decode(cs); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		v, err := vector(cs)
		if err != nil {
			return fmt.Errorf("%s: %w", cs.Name, err)
		}
		vectors = append(vectors, v)
	}
	encoded, err := json.MarshalIndent(vectors, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(encoded, '\n'), 0o644)
}

func vector(cs *appsv1alpha1.CloneSet) (Vector, error) {
	// What its webhook does to a v1alpha1 CloneSet on CREATE.
	defaults.SetDefaultsCloneSet(cs, true)
	stored, err := json.Marshal(cs)
	if err != nil {
		return Vector{}, err
	}
	// Its controller names revisions of the v1beta1 form.
	hub := &appsv1beta1.CloneSet{}
	if err := cs.ConvertTo(hub); err != nil {
		return Vector{}, err
	}
	collisions := int32(0)
	cr, err := revision.NewRevisionControl().NewRevision(hub, 1, &collisions)
	if err != nil {
		return Vector{}, err
	}
	return Vector{
		Name: cs.Name, Stored: stored,
		RevisionName: cr.Name, RevisionHash: cr.Labels["controller.kubernetes.io/hash"], RevisionData: string(cr.Data.Raw),
		VolumeClaimTemplateHash: cr.Annotations["kruise.io/cloneset-volumeclaimtemplate-hash"],
	}, nil
}
