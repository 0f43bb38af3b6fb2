package migration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// additions are the schema paths Lifeline has and OpenKruise's module
// v1.9.0 lacks: status conditions its budget and PersistentPodState
// controllers write. A manifest never sets status, so every manifest that
// applies to OpenKruise applies to Lifeline.
var additions = []string{
	"persistentpodstates v1alpha1 .status.conditions",
	"persistentpodstates v1beta1 .status.conditions",
	"podunavailablebudgets v1alpha1 .status.conditions",
	"podunavailablebudgets v1beta1 .status.conditions",
}

// TestCRDSchemasMatchOpenKruise compares each served version's schema with
// the one in OpenKruise's module v1.9.0 (what its controllers and users
// write against): the same properties, types, formats, enums, defaults,
// required fields and extensions, descriptions aside; and the same served
// and stored versions.
func TestCRDSchemasMatchOpenKruise(t *testing.T) {
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cluster.KruiseModuleDir(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"apps.kruise.io_clonesets.yaml", "apps.kruise.io_persistentpodstates.yaml", "policy.kruise.io_podunavailablebudgets.yaml", "apps.kruise.io_statefulsets.yaml", "apps.kruise.io_daemonsets.yaml"} {
		ours, theirs := readCRD(t, filepath.Join(root, "config", "crd", "bases", file)), readCRD(t, filepath.Join(dir, "config", "crd", "bases", file))
		if len(ours.Spec.Versions) != len(theirs.Spec.Versions) {
			t.Errorf("%s: %d versions, OpenKruise %d", file, len(ours.Spec.Versions), len(theirs.Spec.Versions))
			continue
		}
		for i, v := range ours.Spec.Versions {
			w := theirs.Spec.Versions[i]
			if v.Name != w.Name || v.Served != w.Served || v.Storage != w.Storage {
				t.Errorf("%s: version %s served %v stored %v; OpenKruise %s served %v stored %v", file, v.Name, v.Served, v.Storage, w.Name, w.Served, w.Storage)
				continue
			}
			var diffs []string
			compareSchema(ours.Spec.Names.Plural+" "+v.Name, "", v.Schema.OpenAPIV3Schema, w.Schema.OpenAPIV3Schema, &diffs)
			for _, d := range diffs {
				t.Errorf("%s: %s", file, d)
			}
		}
	}
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

// compareSchema walks both schemas and appends what differs; a property
// only Lifeline has is allowed when listed in additions.
func compareSchema(version, path string, ours, theirs *apiextensionsv1.JSONSchemaProps, diffs *[]string) {
	if ours == nil || theirs == nil {
		if (ours == nil) != (theirs == nil) {
			*diffs = append(*diffs, fmt.Sprintf("%s %s: present on one side only", version, path))
		}
		return
	}
	a, b := *ours, *theirs
	for _, s := range []*apiextensionsv1.JSONSchemaProps{&a, &b} {
		s.Description, s.Properties, s.Items, s.AdditionalProperties = "", nil, nil, nil
	}
	if !reflect.DeepEqual(a, b) {
		*diffs = append(*diffs, fmt.Sprintf("%s %s: %+v, OpenKruise %+v", version, path, a, b))
	}
	for name, p := range ours.Properties {
		q, ok := theirs.Properties[name]
		if !ok {
			if !slices.Contains(additions, version+" "+path+"."+name) {
				*diffs = append(*diffs, fmt.Sprintf("%s %s.%s: OpenKruise has no such field", version, path, name))
			}
			continue
		}
		compareSchema(version, path+"."+name, &p, &q, diffs)
	}
	for name := range theirs.Properties {
		if _, ok := ours.Properties[name]; !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s %s.%s: missing", version, path, name))
		}
	}
	if ours.Items != nil || theirs.Items != nil {
		var x, y *apiextensionsv1.JSONSchemaProps
		if ours.Items != nil {
			x = ours.Items.Schema
		}
		if theirs.Items != nil {
			y = theirs.Items.Schema
		}
		compareSchema(version, path+"[]", x, y, diffs)
	}
	if ours.AdditionalProperties != nil || theirs.AdditionalProperties != nil {
		var x, y *apiextensionsv1.JSONSchemaProps
		if ours.AdditionalProperties != nil {
			x = ours.AdditionalProperties.Schema
		}
		if theirs.AdditionalProperties != nil {
			y = theirs.AdditionalProperties.Schema
		}
		compareSchema(version, path+"{}", x, y, diffs)
	}
}
