package podadmission

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestDisruptedPod(t *testing.T) {
	pod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: types.UID(uid)}}
	}
	at := func(p *corev1.Pod, rv string) *corev1.Pod { p.ResourceVersion = rv; return p }
	reader := func(p *corev1.Pod) client.Reader {
		b := fake.NewClientBuilder()
		if p != nil {
			b = b.WithObjects(p)
		}
		return b.Build()
	}
	raw := func(obj any) runtime.RawExtension {
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: data}
	}
	deletion := func(old *corev1.Pod) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Namespace: "ns", Name: "web-0", OldObject: raw(old)}}
	}
	eviction := func(uid string) admission.Request {
		e := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"}}
		if uid != "" {
			id := types.UID(uid)
			e.DeleteOptions = &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &id}}
		}
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, SubResource: "eviction", Namespace: "ns", Name: "web-0", Object: raw(e)}}
	}
	cases := []struct {
		name        string
		req         admission.Request
		cache, live *corev1.Pod
		want        string // the UID of the pod judged, "" for none
		source      string // where the pod was read: cache or live
	}{
		{"delete: the request's pod, not the cache's predecessor", deletion(pod("new")), pod("old"), pod("new"), "new", "live"},
		{"delete: judged even when the cache has not seen the pod", deletion(pod("new")), nil, pod("new"), "new", "live"},
		{"delete of a pod that does not exist (a forged review): nothing", deletion(pod("forged")), nil, nil, "", "live"},
		{"delete naming a UID the pod does not have (forged): nothing", deletion(pod("forged")), pod("real"), pod("real"), "", "live"},
		{"delete the cache shows at that version: no read", deletion(at(pod("a"), "7")), at(pod("a"), "7"), nil, "a", "cache"},
		{"eviction without precondition: the cached pod", eviction(""), pod("a"), pod("b"), "a", "cache"},
		{"eviction of a pod nobody has: asked live", eviction(""), nil, nil, "", "live"},
		{"eviction of a pod the cache does not show (a namespace just come in): read live", eviction(""), nil, pod("a"), "a", "live"},
		{"eviction whose UID the cache has", eviction("a"), pod("a"), pod("b"), "a", "cache"},
		{"eviction the cache lags behind: read live", eviction("b"), pod("a"), pod("b"), "b", "live"},
		{"eviction the cache has not seen yet: read live", eviction("b"), nil, pod("b"), "b", "live"},
		{"eviction of a pod already replaced: nothing to disrupt", eviction("a"), pod("b"), pod("b"), "", "live"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			request := map[admissionv1.Operation]string{admissionv1.Delete: "delete", admissionv1.Create: "eviction"}[c.req.Operation]
			before := testutil.ToFloat64(disruptedReads.WithLabelValues(request, c.source))
			got, err := DisruptedPod(context.Background(), reader(c.cache), reader(c.live), c.req)
			if err != nil {
				t.Fatal(err)
			}
			if n := testutil.ToFloat64(disruptedReads.WithLabelValues(request, c.source)) - before; n != 1 {
				t.Errorf("%v %s reads counted, want 1", n, c.source)
			}
			var uid string
			if got != nil {
				uid = string(got.UID)
			}
			if uid != c.want {
				t.Errorf("judged the pod with UID %q, want %q", uid, c.want)
			}
		})
	}
}
