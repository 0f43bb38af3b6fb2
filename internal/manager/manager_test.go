package manager

import (
	"flag"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lifeline-k8s/lifeline/internal/podadmission"
)

func TestFeaturesBindTheirFlagsAndValidateTogether(t *testing.T) {
	features := Features()
	fs := flag.NewFlagSet("lifeline-manager", flag.ContinueOnError)
	BindFlags(features, fs)
	for _, name := range []string{"cloneset-workers", "cloneset-recreate-pods-when-vct-changes", "pps-workload-whitelist", "expectation-timeout"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag --%s is not bound", name)
		}
	}
	if err := fs.Parse([]string{"--pps-workload-whitelist=no-slash"}); err != nil {
		t.Fatal(err)
	}
	bad := &Feature{Name: "other", Validate: func() error { return errString("other is wrong") }}
	_, err := New(append(features, bad))
	if err == nil || !strings.Contains(err.Error(), "--pps-workload-whitelist") || !strings.Contains(err.Error(), "other is wrong") {
		t.Fatalf("New = %v, want both errors at once", err)
	}
}

func TestSchemeHoldsEveryFeaturesTypes(t *testing.T) {
	s := Scheme()
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"},
		{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "PersistentPodState"},
		{Group: "policy.kruise.io", Version: "v1alpha1", Kind: "PodUnavailableBudget"},
		{Group: "", Version: "v1", Kind: "Pod"},
	} {
		if !s.Recognizes(gvk) {
			t.Errorf("the scheme does not know %v", gvk)
		}
	}
}

func TestMatchConditionsComeFromOneFeaturePerWebhook(t *testing.T) {
	got, err := MatchConditions(Features())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mpodcreate.lifeline.dev", "vpod.lifeline.dev", "vpodupdate.lifeline.dev"} {
		if len(got[name]) == 0 {
			t.Errorf("webhook %s has no match condition", name)
		}
	}
	clash := &Feature{Name: "clash", MatchConditions: map[string][]podadmission.MatchCondition{"vpod.lifeline.dev": {{Name: "x", Expression: "true"}}}}
	if _, err := MatchConditions(append(Features(), clash)); err == nil || !strings.Contains(err.Error(), "clash") {
		t.Fatalf("MatchConditions with two features on one webhook = %v, want an error naming both", err)
	}
}

func TestObjectSelectorsComeFromOneFeaturePerWebhook(t *testing.T) {
	got, err := ObjectSelectors(Features())
	if err != nil {
		t.Fatal(err)
	}
	if got["mpodstatus.lifeline.dev"] == nil {
		t.Error("the pod status webhook has no object selector: every kubelet report in the cluster would pay its match conditions")
	}
	clash := &Feature{Name: "clash", ObjectSelectors: map[string]*metav1.LabelSelector{"mpodstatus.lifeline.dev": {}}}
	if _, err := ObjectSelectors(append(Features(), clash)); err == nil || !strings.Contains(err.Error(), "clash") {
		t.Fatalf("ObjectSelectors with two features on one webhook = %v, want an error naming both", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
