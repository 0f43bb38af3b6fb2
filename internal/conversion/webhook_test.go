package conversion

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	apix "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// The conversion webhook answers a ConversionReview as the API server
// sends it: each object in the desired version, as Convert makes it, with
// the review's UID; a kind it does not serve is an error, not a guess.
func TestConversionWebhook(t *testing.T) {
	h, err := Handler(scheme, CloneSet, PersistentPodState, PodUnavailableBudget)
	if err != nil {
		t.Fatal(err)
	}
	cs := &appsv1alpha1.CloneSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: appsv1alpha1.CloneSetSpec{Replicas: ptr.To[int32](3), UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{
			Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, Partition: ptr.To(intOrString(1))}}}
	budget := &policyv1beta1.PodUnavailableBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy.kruise.io/v1beta1", Kind: "PodUnavailableBudget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"},
		Spec: policyv1beta1.PodUnavailableBudgetSpec{ProtectOperations: []policyv1beta1.PubOperation{"DELETE"},
			IgnoredPodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}}}

	review := func(desired string, objs ...runtime.Object) *apix.ConversionReview {
		req := &apix.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
			Request: &apix.ConversionRequest{UID: types.UID("review-1"), DesiredAPIVersion: desired}}
		for _, o := range objs {
			raw, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			req.Request.Objects = append(req.Request.Objects, runtime.RawExtension{Raw: raw})
		}
		body, _ := json.Marshal(req)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
		out := &apix.ConversionReview{}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), out) != nil || out.Response == nil {
			t.Fatalf("answer %d: %s", rec.Code, rec.Body.String())
		}
		return out
	}

	got := review("apps.kruise.io/v1beta1", cs)
	if got.Response.UID != "review-1" || got.Response.Result.Status != metav1.StatusSuccess || len(got.Response.ConvertedObjects) != 1 {
		t.Fatalf("CloneSet: %+v", got.Response)
	}
	want, err := convertJSON(mustJSON(t, cs))
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, "CloneSet", want, got.Response.ConvertedObjects[0].Raw)

	got = review("policy.kruise.io/v1alpha1", budget)
	if got.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("budget: %+v", got.Response.Result)
	}
	if want, err = convertJSON(mustJSON(t, budget)); err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, "PodUnavailableBudget", want, got.Response.ConvertedObjects[0].Raw)
	var alpha map[string]any
	_ = json.Unmarshal(got.Response.ConvertedObjects[0].Raw, &alpha)
	if alpha["metadata"].(map[string]any)["annotations"].(map[string]any)[StashAnnotation] == nil {
		t.Errorf("the budget's ignoredPodSelector is not kept in %s: %s", StashAnnotation, got.Response.ConvertedObjects[0].Raw)
	}

	h, err = Handler(scheme, CloneSet)
	if err != nil {
		t.Fatal(err)
	}
	if got = review("policy.kruise.io/v1alpha1", budget); got.Response.Result.Status == metav1.StatusSuccess {
		t.Errorf("a kind not registered converted: %+v", got.Response)
	}
}

func mustJSON(t *testing.T, o runtime.Object) []byte {
	t.Helper()
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func assertSameJSON(t *testing.T, what string, want, got []byte) {
	t.Helper()
	var a, b map[string]any
	if err := json.Unmarshal(want, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatal(err)
	}
	for _, d := range jsonDiff("", a, b) {
		t.Errorf("%s: the webhook's answer differs from Convert's: %s", what, d)
	}
}

func intOrString(i int32) intstr.IntOrString { return intstr.FromInt32(i) }
