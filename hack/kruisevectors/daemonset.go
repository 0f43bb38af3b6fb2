package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/openkruise/kruise/apis/apps/defaults"
	appsv1alpha1 "github.com/openkruise/kruise/apis/apps/v1alpha1"
	appsv1beta1 "github.com/openkruise/kruise/apis/apps/v1beta1"
	"github.com/openkruise/kruise/pkg/webhook/daemonset/validating"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DaemonSetCase is one admission of an Advanced DaemonSet: the object as
// a client sends it (and the stored one, for an update).
type DaemonSetCase struct {
	Name   string          `json:"name"`
	Object json.RawMessage `json:"object"`
	Old    json.RawMessage `json:"old,omitempty"`
}

// DaemonSetVector is what OpenKruise v1.9.0 made of a case: the object
// its mutating webhook's defaults leave (in the request's version), its
// validating webhook's answer (HTTP code and message; 200 when allowed),
// and, for an allowed v1beta1 object, its revision data and the hash its
// controller names it by (Kubernetes' ComputeHash over the k8s.io/api
// v0.32 structs, collision count nil).
type DaemonSetVector struct {
	Name         string          `json:"name"`
	Defaulted    json.RawMessage `json:"defaulted"`
	Code         int32           `json:"code"`
	Message      string          `json:"message,omitempty"`
	RevisionData string          `json:"revisionData,omitempty"`
	RevisionHash string          `json:"revisionHash,omitempty"`
}

func runDaemonSets(corpus, out string) error {
	for _, add := range []func(*runtime.Scheme) error{appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme} {
		if err := add(scheme.Scheme); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(corpus)
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var vectors []DaemonSetVector
	for {
		var c DaemonSetCase
		if err := decoder.Decode(&c); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if c.Name == "" {
			continue // a document of comments only
		}
		v, err := daemonSetVector(c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		vectors = append(vectors, v)
	}
	encoded, err := json.MarshalIndent(vectors, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(encoded, '\n'), 0o644)
}

func daemonSetVector(c DaemonSetCase) (DaemonSetVector, error) {
	var head metav1.TypeMeta
	if err := json.Unmarshal(c.Object, &head); err != nil {
		return DaemonSetVector{}, err
	}
	v := DaemonSetVector{Name: c.Name}
	var obj runtime.Object
	switch head.APIVersion {
	case "apps.kruise.io/v1alpha1":
		ds := &appsv1alpha1.DaemonSet{}
		if err := json.Unmarshal(c.Object, ds); err != nil {
			return v, err
		}
		defaults.SetDefaultsDaemonSet(ds)
		obj = ds
	default:
		ds := &appsv1beta1.DaemonSet{}
		if err := json.Unmarshal(c.Object, ds); err != nil {
			return v, err
		}
		defaults.SetDefaultsDaemonSetV1beta1(ds)
		obj = ds
	}
	defaulted, err := json.Marshal(obj)
	if err != nil {
		return v, err
	}
	v.Defaulted = defaulted
	gv := head.GroupVersionKind()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: gv.Kind},
		Resource:  metav1.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: "daemonsets"},
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: defaulted},
	}}
	if c.Old != nil {
		req.Operation, req.OldObject = admissionv1.Update, runtime.RawExtension{Raw: c.Old}
	}
	h := &validating.DaemonSetCreateUpdateHandler{Decoder: admission.NewDecoder(scheme.Scheme)}
	resp := h.Handle(context.Background(), req)
	v.Code = 200
	if !resp.Allowed {
		v.Code, v.Message = resp.Result.Code, resp.Result.Message
	}
	if ds, ok := obj.(*appsv1beta1.DaemonSet); ok && resp.Allowed {
		// The controller's revision data is a private function's; it is
		// rebuilt as that function documents it: plain encoding/json of the
		// set, reduced to the template with "$patch": "replace".
		raw, err := json.Marshal(ds)
		if err != nil {
			return v, err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return v, err
		}
		tmpl := m["spec"].(map[string]any)["template"].(map[string]any)
		tmpl["$patch"] = "replace"
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
		if err != nil {
			return v, err
		}
		v.RevisionData, v.RevisionHash = string(patch), controller.ComputeHash(&ds.Spec.Template, nil)
	}
	return v, nil
}
