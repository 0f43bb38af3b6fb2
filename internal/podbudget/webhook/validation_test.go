package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

func budget(name string, mutate ...func(*policyv1alpha1.PodUnavailableBudget)) *policyv1alpha1.PodUnavailableBudget {
	b := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	v := intstr.FromString("25%")
	b.Spec.MaxUnavailable = &v
	for _, m := range mutate {
		m(b)
	}
	return b
}

func TestValidate(t *testing.T) {
	target := func(b *policyv1alpha1.PodUnavailableBudget) {
		b.Spec.Selector = nil
		b.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	}
	for _, c := range []struct {
		name string
		pub  *policyv1alpha1.PodUnavailableBudget
		want []string // substrings, one per expected error; none for valid
	}{
		{"valid selector", budget("a"), nil},
		{"valid targetRef", budget("a", target), nil},
		{"neither selector nor targetRef", budget("a", func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.Selector = nil }),
			[]string{"spec.selector: Required value: no selector or targetRef defined in PodUnavailableBudget"}},
		{"both", budget("a", func(b *policyv1alpha1.PodUnavailableBudget) {
			b.Spec.TargetReference = &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		}), []string{"selector and targetRef are mutually exclusive"}},
		{"empty targetRef", budget("a", target, func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.TargetReference.Name = "" }),
			[]string{"empty TargetReference is not valid"}},
		{"empty selector", budget("a", func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.Selector = &metav1.LabelSelector{} }),
			[]string{"empty selector is not valid"}},
		{"neither number", budget("a", func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MaxUnavailable = nil }),
			[]string{"no maxUnavailable or minAvailable defined"}},
		{"both numbers", budget("a", func(b *policyv1alpha1.PodUnavailableBudget) { v := intstr.FromInt32(1); b.Spec.MinAvailable = &v }),
			[]string{"maxUnavailable and minAvailable are mutually exclusive"}},
		{"over 100%", budget("a", func(b *policyv1alpha1.PodUnavailableBudget) {
			v := intstr.FromString("120%")
			b.Spec.MaxUnavailable = &v
		}),
			[]string{"must not be greater than 100%"}},
		{"negative", budget("a", func(b *policyv1alpha1.PodUnavailableBudget) { v := intstr.FromInt32(-1); b.Spec.MaxUnavailable = &v }),
			[]string{"must be greater than or equal to 0"}},
		{"every error at once", budget("a", func(b *policyv1alpha1.PodUnavailableBudget) {
			b.Spec.Selector, b.Spec.MaxUnavailable = nil, nil
			b.Annotations = map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "DELETE,REBOOT", policyv1alpha1.PubProtectTotalReplicasAnnotation: "x"}
		}), []string{`"REBOOT": supported values`, "must be a valid int32", "no selector or targetRef", "no maxUnavailable or minAvailable"}},
	} {
		errs := Validate(c.pub, nil, nil)
		if len(errs) != len(c.want) {
			t.Errorf("%s: %d errors, want %d: %v", c.name, len(errs), len(c.want), errs)
			continue
		}
		all := errs.ToAggregate()
		for _, w := range c.want {
			if all == nil || !strings.Contains(all.Error(), w) {
				t.Errorf("%s: %v does not say %q", c.name, all, w)
			}
		}
	}
}

func TestValidateUpdateKeepsWhatItGuards(t *testing.T) {
	old := budget("a")
	changed := budget("a", func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.Selector.MatchLabels["tier"] = "x" })
	if errs := Validate(changed, old, nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), "cannot be modified") {
		t.Errorf("%v", errs)
	}
	bumped := budget("a", func(b *policyv1alpha1.PodUnavailableBudget) {
		v := intstr.FromString("50%")
		b.Spec.MaxUnavailable = &v
	})
	if errs := Validate(bumped, old, nil); len(errs) != 0 {
		t.Errorf("changing maxUnavailable: %v", errs)
	}
}

func TestConflicts(t *testing.T) {
	other := budget("other")
	if errs := Validate(budget("a"), nil, []policyv1alpha1.PodUnavailableBudget{*other}); len(errs) != 1 ||
		!strings.Contains(errs[0].Error(), "in conflict with other PodUnavailableBudget other") {
		t.Errorf("same selector: %v", errs)
	}
	if errs := Validate(budget("other"), nil, []policyv1alpha1.PodUnavailableBudget{*other}); len(errs) != 0 {
		t.Errorf("itself: %v", errs)
	}
}

func TestLooseOverlap(t *testing.T) {
	sel := func(labels map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
	}
	in := func(k string, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: v}
	}
	notIn := func(k string, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpNotIn, Values: v}
	}
	exists := metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpExists}
	for _, c := range []struct {
		name string
		a, b *metav1.LabelSelector
		want bool
	}{
		{"same labels", sel(map[string]string{"app": "web"}), sel(map[string]string{"app": "web"}), true},
		{"different values", sel(map[string]string{"app": "web"}), sel(map[string]string{"app": "db"}), false},
		{"different keys", sel(map[string]string{"app": "web"}), sel(map[string]string{"app": "web", "tier": "x"}), false},
		{"In sharing a value", sel(nil, in("app", "web", "api")), sel(nil, in("app", "api")), true},
		{"In against Exists", sel(nil, in("app", "web")), sel(nil, exists), true},
		{"In against a NotIn of it", sel(nil, in("app", "web")), sel(nil, notIn("app", "web")), false},
		{"In against a NotIn of another", sel(nil, in("app", "web")), sel(nil, notIn("app", "db")), true},
	} {
		if got := LooseOverlap(c.a, c.b); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestWarnings(t *testing.T) {
	selector := func(labels map[string]string) *policyv1alpha1.PodUnavailableBudget {
		return &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"},
			Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	}
	other := func(name string, b *policyv1alpha1.PodUnavailableBudget) policyv1alpha1.PodUnavailableBudget {
		o := *b.DeepCopy()
		o.Name = name
		return o
	}
	target := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "by-target"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"}}}
	webPod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-x", Labels: map[string]string{"app": "web", "tier": "front"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", Controller: ptr.To(true)}}}}
	cases := []struct {
		name   string
		pub    *policyv1alpha1.PodUnavailableBudget
		others []policyv1alpha1.PodUnavailableBudget
		pods   []corev1.Pod
		want   []string // parts of each warning, in order
	}{
		{"alone", selector(map[string]string{"app": "web"}), nil, nil, nil},
		{"other keys, could match one pod", selector(map[string]string{"app": "web"}), []policyv1alpha1.PodUnavailableBudget{other("tier", selector(map[string]string{"tier": "front"}))}, nil, []string{"PodUnavailableBudget tier covers"}},
		{"same key, other value", selector(map[string]string{"app": "web"}), []policyv1alpha1.PodUnavailableBudget{other("db", selector(map[string]string{"app": "db"}))}, nil, nil},
		{"a target budget over the same pod", selector(map[string]string{"tier": "front"}), []policyv1alpha1.PodUnavailableBudget{*target}, []corev1.Pod{webPod}, []string{"PodUnavailableBudget by-target covers"}},
		{"a target budget over other pods", selector(map[string]string{"tier": "back"}), []policyv1alpha1.PodUnavailableBudget{*target}, []corev1.Pod{webPod}, nil},
		{"kube-system", func() *policyv1alpha1.PodUnavailableBudget {
			b := selector(map[string]string{"app": "web"})
			b.Namespace = "kube-system"
			return b
		}(), nil, nil, []string{"protects nothing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Warnings(context.Background(), fake.NewClientBuilder().Build(), c.pub, c.others, c.pods)
			if len(got) != len(c.want) {
				t.Fatalf("warnings %q, want %d", got, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q, want one containing %q", got[i], w)
				}
			}
		})
	}
}
