package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	appsv1alpha1 "github.com/openkruise/kruise/apis/apps/v1alpha1"
	appsv1beta1 "github.com/openkruise/kruise/apis/apps/v1beta1"
	policyv1alpha1 "github.com/openkruise/kruise/apis/policy/v1alpha1"
	policyv1beta1 "github.com/openkruise/kruise/apis/policy/v1beta1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// ConversionVector is what OpenKruise's own conversion code made of one
// object: the object in the other version, or the error it returned.
type ConversionVector struct {
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// spoke and hub pair a kind's v1alpha1 and v1beta1 types.
type pair struct {
	spoke func() conversion.Convertible
	hub   func() conversion.Hub
}

var pairs = map[string]pair{
	"CloneSet": {
		func() conversion.Convertible { return &appsv1alpha1.CloneSet{} },
		func() conversion.Hub { return &appsv1beta1.CloneSet{} },
	},
	"PersistentPodState": {
		func() conversion.Convertible { return &appsv1alpha1.PersistentPodState{} },
		func() conversion.Hub { return &appsv1beta1.PersistentPodState{} },
	},
	"StatefulSet": {
		func() conversion.Convertible { return &appsv1alpha1.StatefulSet{} },
		func() conversion.Hub { return &appsv1beta1.StatefulSet{} },
	},
	"DaemonSet": {
		func() conversion.Convertible { return &appsv1alpha1.DaemonSet{} },
		func() conversion.Hub { return &appsv1beta1.DaemonSet{} },
	},
	"PodUnavailableBudget": {
		func() conversion.Convertible { return &policyv1alpha1.PodUnavailableBudget{} },
		func() conversion.Hub { return &policyv1beta1.PodUnavailableBudget{} },
	},
}

// runConversion converts every object of corpus to its other version with
// OpenKruise's ConvertTo (v1alpha1 to v1beta1) or ConvertFrom (back).
func runConversion(corpus, out string) error {
	data, err := os.ReadFile(corpus)
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var vectors []ConversionVector
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		v, err := convertOne(raw)
		if err != nil {
			return err
		}
		vectors = append(vectors, v)
	}
	encoded, err := json.MarshalIndent(vectors, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(encoded, '\n'), 0o644)
}

func convertOne(raw json.RawMessage) (ConversionVector, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return ConversionVector{}, err
	}
	p, ok := pairs[head.Kind]
	if !ok {
		return ConversionVector{}, fmt.Errorf("%s: kind %q has no conversion", head.Metadata.Name, head.Kind)
	}
	v := ConversionVector{Name: head.Metadata.Name, Input: raw}
	var result any
	var convErr error
	switch head.APIVersion {
	case "apps.kruise.io/v1alpha1", "policy.kruise.io/v1alpha1":
		src, dst := p.spoke(), p.hub()
		if err := json.Unmarshal(raw, src); err != nil {
			return v, err
		}
		convErr, result = src.ConvertTo(dst), dst
	default:
		src, dst := p.hub(), p.spoke()
		if err := json.Unmarshal(raw, src); err != nil {
			return v, err
		}
		convErr, result = dst.ConvertFrom(src), dst
	}
	if convErr != nil {
		v.Error = convErr.Error()
		return v, nil
	}
	out, err := json.Marshal(result)
	v.Output = out
	return v, err
}
