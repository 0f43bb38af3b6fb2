package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// A metadata-only update that takes a covered pod out of its budget is
// judged as the disruption it leads to, unless its user may edit the
// budget (the API server says so: user "platform" here).
func TestLeavingABudgetIsADisruption(t *testing.T) {
	owned := func(p *corev1.Pod, kind, name, uid string) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: k8stypes.UID("u-" + uid), Controller: ptr.To(true)}}
	}
	cases := []struct {
		name    string
		allowed int32
		user    string
		change  func(*corev1.Pod)
		want    bool // admitted
		why     string
		records int
	}{
		{"relabelled out of the selector", 0, "app-team", func(p *corev1.Pod) { p.Labels["app"] = "other" }, false, "no longer match", 0},
		{"label removed", 0, "app-team", func(p *corev1.Pod) { delete(p.Labels, "app") }, false, "no longer match", 0},
		{"another label changed", 0, "app-team", func(p *corev1.Pod) { p.Labels["tier"] = "web" }, true, "", 0},
		{"controller replaced by one that does not exist", 0, "app-team", func(p *corev1.Pod) { owned(p, "Deployment", "ghost", "ghost") }, false, "does not exist", 0},
		{"no-protect set", 0, "app-team", func(p *corev1.Pod) {
			p.Annotations = map[string]string{policyv1alpha1.PodPubNoProtectionAnnotation: "true"}
		}, false, "sets pub.kruise.io/no-protect", 0},
		{"no-protect set by who may edit the budget", 0, "platform", func(p *corev1.Pod) {
			p.Annotations = map[string]string{policyv1alpha1.PodPubNoProtectionAnnotation: "true"}
		}, true, "", 0},
		{"relabelled by who may edit the budget", 0, "platform", func(p *corev1.Pod) { p.Labels["app"] = "other" }, true, "", 0},
		{"relabelled out while the budget allows one", 1, "app-team", func(p *corev1.Pod) { p.Labels["app"] = "other" }, true, "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pub := budgetObj("b", map[string]string{"app": "a"}, c.allowed)
			var reviews int
			api := fakeWithReviews(t, func(r *authorizationv1.SubjectAccessReview) {
				reviews++
				r.Status.Allowed = r.Spec.User == "platform" && r.Spec.ResourceAttributes.Name == "b" && r.Spec.ResourceAttributes.Verb == "update"
			}, pub)
			g := &Guard{Cache: api, Live: api, Writer: api, Recorder: events.NewFakeRecorder(100), Now: time.Now}
			old := readyPod(1)
			updated := old.DeepCopy()
			c.change(updated)
			resp := g.Validate(context.Background(), updateRequest(t, c.user, old, updated))
			if resp.Allowed != c.want || !strings.Contains(resp.Result.Message, c.why) {
				t.Fatalf("admitted %v (%s), want %v with %q", resp.Allowed, resp.Result.Message, c.want, c.why)
			}
			got := &policyv1alpha1.PodUnavailableBudget{}
			if err := api.Get(context.Background(), client.ObjectKeyFromObject(pub), got); err != nil {
				t.Fatal(err)
			}
			if len(got.Status.DisruptedPods) != c.records {
				t.Errorf("%d disruptions recorded, want %d", len(got.Status.DisruptedPods), c.records)
			}
			if c.name == "another label changed" && reviews != 0 {
				t.Errorf("%d access reviews for an update that leaves no budget, want 0", reviews)
			}
		})
	}
}

// A relabelling storm asks the API server once per user and budget: the
// answers are reused, a refusal as well as a grant.
func TestLeavingReusesAccessReviews(t *testing.T) {
	pub := budgetObj("b", map[string]string{"app": "a"}, 0)
	reviews := map[string]int{}
	api := fakeWithReviews(t, func(r *authorizationv1.SubjectAccessReview) {
		reviews[r.Spec.User]++
		r.Status.Allowed = r.Spec.User == "platform"
	}, pub)
	g := &Guard{Cache: api, Live: api, Writer: api, Recorder: events.NewFakeRecorder(100), Now: time.Now}
	for _, user := range []string{"platform", "app-team"} {
		for i := range 5 {
			old := readyPod(i)
			updated := old.DeepCopy()
			updated.Labels["app"] = "other"
			if resp := g.Validate(context.Background(), updateRequest(t, user, old, updated)); resp.Allowed != (user == "platform") {
				t.Fatalf("%s relabelling %s: admitted %v (%s)", user, old.Name, resp.Allowed, resp.Result.Message)
			}
		}
	}
	if reviews["platform"] != 1 || reviews["app-team"] != 1 {
		t.Errorf("access reviews by user: %v, want one each for 5 relabels each", reviews)
	}
}

// Left keeps the budgets the pod is no longer covered by, by identity.
func TestLeft(t *testing.T) {
	a, b, c := budgetObj("a", nil, 0), budgetObj("b", nil, 0), budgetObj("c", nil, 0)
	got := Left([]*policyv1alpha1.PodUnavailableBudget{a, b, c}, []*policyv1alpha1.PodUnavailableBudget{b})
	if len(got) != 2 || got[0] != a || got[1] != c {
		t.Errorf("Left = %v, want a and c", names(got))
	}
	if got := Left([]*policyv1alpha1.PodUnavailableBudget{a}, []*policyv1alpha1.PodUnavailableBudget{a}); len(got) != 0 {
		t.Errorf("Left of the same budgets = %v, want none", names(got))
	}
}

// fakeWithReviews is fakeAPI whose SubjectAccessReviews answer by review.
func fakeWithReviews(t *testing.T, review func(*authorizationv1.SubjectAccessReview), objs ...client.Object) client.Client {
	t.Helper()
	return fakeAPIWith(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if r, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
			review(r)
			return nil
		}
		return c.Create(ctx, obj, opts...)
	}}, objs...)
}

func updateRequest(t *testing.T, user string, old, updated *corev1.Pod) admission.Request {
	t.Helper()
	o, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	n, err := json.Marshal(updated)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Update, Namespace: old.Namespace, Name: old.Name,
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		UserInfo:  authenticationv1.UserInfo{Username: user},
		OldObject: runtime.RawExtension{Raw: o}, Object: runtime.RawExtension{Raw: n},
	}}
}

// The refusal counter's labels are bounded: no pod name for a pod without
// a controller, and users past maxUsers are "other".
func TestRefusalCounterLabelsAreBounded(t *testing.T) {
	if got := ownerLabel(readyPod(7)); got != "unknown_ns_" {
		t.Errorf("owner label of a pod without a controller = %q, want unknown_ns_", got)
	}
	u := &userLabels{seen: map[string]bool{}}
	for i := range maxUsers {
		if got := u.label(fmt.Sprint("user-", i)); got != fmt.Sprint("user-", i) {
			t.Fatalf("user %d labelled %q", i, got)
		}
	}
	if got, again := u.label("one-too-many"), u.label("user-3"); got != "other" || again != "user-3" {
		t.Errorf("past the bound: %q and %q, want other and a known user kept", got, again)
	}
}
