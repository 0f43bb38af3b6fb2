package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resourcesMapper answers ResourcesFor as the manager's mapper did once an
// Advanced StatefulSet's CRD was there: every group beginning with the one
// asked for, apps.kruise.io's first.
type resourcesMapper struct {
	meta.RESTMapper
	all []schema.GroupVersionResource
}

func (m resourcesMapper) ResourcesFor(schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return m.all, nil
}

func TestExactGroupPicksTheGroupAskedFor(t *testing.T) {
	m := exactGroup{resourcesMapper{all: []schema.GroupVersionResource{
		{Group: "apps.kruise.io", Version: "v1beta1", Resource: "statefulsets"},
		{Group: "apps", Version: "v1", Resource: "statefulsets"},
	}}}
	got, err := m.ResourceFor(schema.GroupVersionResource{Group: "apps", Resource: "statefulsets"})
	if err != nil || got != (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}) {
		t.Fatalf("ResourceFor(apps statefulsets) = %v, %v", got, err)
	}
	if _, err := m.ResourceFor(schema.GroupVersionResource{Group: "batch", Resource: "statefulsets"}); !meta.IsNoMatchError(err) {
		t.Fatalf("a group nobody serves: %v, want no match", err)
	}
}
