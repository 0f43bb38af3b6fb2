package webhook

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

func pps(name string, mutate ...func(*appsv1alpha1.PersistentPodStateSpec)) *appsv1alpha1.PersistentPodState {
	p := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
		RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"topology.kubernetes.io/zone"}},
	}}
	for _, m := range mutate {
		m(&p.Spec)
	}
	return p
}

func TestValidate(t *testing.T) {
	shard := schema.GroupKind{Group: "example.dev", Kind: "Shard"}
	for name, c := range map[string]struct {
		pps, old *appsv1alpha1.PersistentPodState
		others   []appsv1alpha1.PersistentPodState
		want     []string // every error expected, by field path and text
	}{
		"valid":                {pps: pps("a")},
		"advanced statefulset": {pps: pps("a", func(s *appsv1alpha1.PersistentPodStateSpec) { s.TargetReference.APIVersion = "apps.kruise.io/v1beta1" })},
		"whitelisted kind": {pps: pps("a", func(s *appsv1alpha1.PersistentPodStateSpec) {
			s.TargetReference = appsv1alpha1.TargetReference{APIVersion: "example.dev/v1", Kind: "Shard", Name: "s"}
		})},
		"empty target": {pps: pps("a", func(s *appsv1alpha1.PersistentPodStateSpec) { s.TargetReference.Name = "" }),
			want: []string{"spec.targetRef: Required value: empty targetRef is not valid for PersistentPodState."}},
		"not a statefulset": {pps: pps("a", func(s *appsv1alpha1.PersistentPodStateSpec) { s.TargetReference.Kind = "Deployment" }),
			want: []string{"spec.targetRef.kind", "targetRef.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList"}},
		"no topology": {pps: pps("a", func(s *appsv1alpha1.PersistentPodStateSpec) { s.RequiredPersistentTopology = nil }),
			want: []string{"spec: Required value: TopologyConstraint and TopologyPreference cannot be empty at the same time"}},
		"everything wrong at once": {pps: pps("a", func(s *appsv1alpha1.PersistentPodStateSpec) {
			s.RequiredPersistentTopology.NodeTopologyKeys = nil
			s.PreferredPersistentTopology = []appsv1alpha1.PreferredTopologyTerm{{Weight: 101, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"bad key"}}}}
			s.PersistentPodAnnotations = []appsv1alpha1.PersistentPodAnnotation{{Key: ""}}
		}), want: []string{"spec.requiredPersistentTopology.nodeTopologyKeys: Required value", "spec.preferredPersistentTopology[0].weight: Invalid value: 101: must be in the range 1-100",
			"spec.preferredPersistentTopology[0].preference.nodeTopologyKeys[0]", "spec.persistentPodAnnotations[0].key"}},
		"target changed": {pps: pps("a", func(s *appsv1alpha1.PersistentPodStateSpec) { s.TargetReference.Name = "other" }), old: pps("a"),
			want: []string{"spec.targetRef: Forbidden: targetRef cannot be modified"}},
		"conflict": {pps: pps("a"), others: []appsv1alpha1.PersistentPodState{*pps("a"), *pps("b", func(s *appsv1alpha1.PersistentPodStateSpec) {
			s.TargetReference.APIVersion = "apps/v1beta2" // same group, other version: same target
		})}, want: []string{"targetRef is in conflict with other PersistentPodState b"}},
	} {
		errs := Validate(c.pps, c.old, c.others, []schema.GroupKind{shard})
		got := errs.ToAggregate()
		if len(c.want) == 0 {
			if got != nil {
				t.Errorf("%s: %v", name, got)
			}
			continue
		}
		for _, w := range c.want {
			if got == nil || !strings.Contains(got.Error(), w) {
				t.Errorf("%s: want %q in %v", name, w, got)
			}
		}
	}
}
