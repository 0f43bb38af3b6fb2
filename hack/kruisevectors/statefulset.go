package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/openkruise/kruise/apis/apps/defaults"
	appsv1beta1 "github.com/openkruise/kruise/apis/apps/v1beta1"
	statefulset "github.com/openkruise/kruise/pkg/controller/statefulset"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/pkg/controller/history"
)

// runStatefulSets records, for each v1beta1 Advanced StatefulSet of corpus,
// what OpenKruise's mutating webhook stores on CREATE (its defaults, with
// its default feature gates) and the revision its controller names for it.
func runStatefulSets(corpus, out string) error {
	if err := appsv1beta1.AddToScheme(scheme.Scheme); err != nil {
		return err
	}
	data, err := os.ReadFile(corpus)
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var vectors []Vector
	for {
		sts := &appsv1beta1.StatefulSet{}
		if err := decoder.Decode(sts); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		v, err := statefulSetVector(sts)
		if err != nil {
			return fmt.Errorf("%s: %w", sts.Name, err)
		}
		vectors = append(vectors, v)
	}
	encoded, err := json.MarshalIndent(vectors, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(encoded, '\n'), 0o644)
}

func statefulSetVector(sts *appsv1beta1.StatefulSet) (Vector, error) {
	defaults.SetDefaultsStatefulSet(sts, true)
	stored, err := json.Marshal(sts)
	if err != nil {
		return Vector{}, err
	}
	// The controller's revision data is a private function's; it is
	// rebuilt here the way that function documents it, and OpenKruise's
	// own Match must then accept it as the set's revision.
	patch, err := revisionData(sts)
	if err != nil {
		return Vector{}, err
	}
	collisions := int32(0)
	cr, err := history.NewControllerRevision(sts, appsv1beta1.SchemeGroupVersion.WithKind("StatefulSet"),
		sts.Spec.Template.Labels, runtime.RawExtension{Raw: patch}, 1, &collisions)
	if err != nil {
		return Vector{}, err
	}
	if ok, err := statefulset.Match(sts, cr); err != nil || !ok {
		return Vector{}, fmt.Errorf("OpenKruise does not match the rebuilt revision data (%v)", err)
	}
	return Vector{Name: sts.Name, Stored: stored, RevisionName: cr.Name, RevisionHash: cr.Labels[history.ControllerRevisionHashLabel], RevisionData: string(patch)}, nil
}

func revisionData(sts *appsv1beta1.StatefulSet) ([]byte, error) {
	encoded, err := runtime.Encode(scheme.Codecs.LegacyCodec(appsv1beta1.SchemeGroupVersion), sts.DeepCopy())
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := json.Unmarshal(encoded, &raw); err != nil {
		return nil, err
	}
	template := raw["spec"].(map[string]any)["template"].(map[string]any)
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}
