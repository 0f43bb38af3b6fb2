package integration

import (
	"context"
	"encoding/json"
	"flag"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/internal/admissiontest"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

// FuzzPodAdmission posts arbitrary AdmissionReviews to every webhook the
// manager serves, the pod webhooks included (creation, deletion, eviction,
// binding), with the manager's caches on the test API server: no panic,
// and every refusal a 4xx with a message. No controller runs.
//
// make test replays the seeds and what it found (testdata/fuzz: a review
// without an object, and a pod whose kind is an object, both answered 500
// by the pod mutation, now 400). The binding webhook's wait
// (--binding-cache-wait) is 1 ms here: a made-up binding names a pod no
// cache will show. The workers share the coordinator's API server (see
// sharedKubeconfigEnv).
func FuzzPodAdmission(f *testing.F) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", Labels: map[string]string{"app": "web", pub.LifecycleStateKey: "Normal"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}}}
	eviction := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"}}
	binding := &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
	raw := func(o any) []byte { b, _ := json.Marshal(o); return b }
	for _, seed := range []struct {
		op          admissionv1.Operation
		sub         string
		obj, old    []byte
		kindGroup   string
		kindVersion string
		kind        string
	}{
		{admissionv1.Create, "", raw(pod), nil, "", "v1", "Pod"},
		{admissionv1.Update, "", raw(pod), raw(pod), "", "v1", "Pod"},
		{admissionv1.Delete, "", nil, raw(pod), "", "v1", "Pod"},
		{admissionv1.Create, "eviction", raw(eviction), nil, "policy", "v1", "Eviction"},
		{admissionv1.Create, "binding", raw(binding), nil, "", "v1", "Binding"},
	} {
		review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "fuzz", Operation: seed.op, SubResource: seed.sub, Namespace: "ns", Name: "web-0",
				Kind:     metav1.GroupVersionKind{Group: seed.kindGroup, Version: seed.kindVersion, Kind: seed.kind},
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}}}
		review.Request.Object.Raw, review.Request.OldObject.Raw = seed.obj, seed.old
		f.Add(raw(review))
	}
	ctrl.SetLogger(logr.Discard())
	server := &admissiontest.Server{}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: manager.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, WebhookServer: server,
	})
	if err != nil {
		f.Fatal(err)
	}
	features := manager.Features()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	manager.BindFlags(features, fs)
	if err := fs.Parse([]string{"--binding-cache-wait=1ms"}); err != nil {
		f.Fatal(err)
	}
	lifeline, err := manager.New(features)
	if err != nil {
		f.Fatal(err)
	}
	lifeline.SetupWebhooks(mgr, "lifeline-manager")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	f.Cleanup(func() { cancel(); <-done })
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		f.Fatal("the manager's cache did not sync")
	}
	f.Fuzz(func(t *testing.T, review []byte) { admissiontest.Check(t, server, review) })
}
