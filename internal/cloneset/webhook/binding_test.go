package webhook

import (
	"context"
	"encoding/json"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
)

// bindingFixture is a CloneSet and its pod waiting in PreparingNormal to be
// bound, and a scheme for them.
func bindingFixture() (*runtime.Scheme, *appsv1alpha1.CloneSet, *corev1.Pod) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = appsv1alpha1.AddToScheme(scheme)
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "cs-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a", UID: "pod-uid",
		Labels:          map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStatePreparingNormal)},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, appsv1alpha1.GroupVersion.WithKind("CloneSet"))}}}
	return scheme, cs, pod
}

func TestBindingWebhook(t *testing.T) {
	scheme, cs, pod := bindingFixture()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	handler := func(objs ...client.Object) *bindingDefaulter {
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
		return &bindingDefaulter{decoder: admission.NewDecoder(scheme), cache: c, now: func() time.Time { return now }}
	}
	request := func(ns string, b *corev1.Binding) admission.Request {
		raw, _ := json.Marshal(b)
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, SubResource: "binding", Namespace: ns, Name: "web-a", Object: runtime.RawExtension{Raw: raw}}}
	}
	// Through the pod admission entry point, as the manager serves it.
	handle := func(h *bindingDefaulter, req admission.Request) admission.Response {
		m := &podadmission.Mutating{}
		m.Register("binding", h, BindingTarget)
		return m.Handle(context.Background(), req)
	}
	binding := &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a", UID: "pod-uid"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n"}}

	h := handler(cs.DeepCopy(), pod.DeepCopy())
	stored := &corev1.Pod{}
	_ = h.cache.Get(context.Background(), client.ObjectKeyFromObject(pod), stored)
	resp := handle(h, request("ns", binding))
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("want an allowed, patched bind: %+v", resp)
	}
	ops := map[string]any{}
	for _, p := range resp.Patches {
		ops[p.Path] = p.Value
	}
	want := map[string]any{
		"/metadata/labels":          map[string]any{pub.LifecycleStateKey: "Normal"},
		"/metadata/annotations":     map[string]any{pub.LifecycleTimestampKey: now.Format(time.RFC3339)},
		"/metadata/resourceVersion": stored.ResourceVersion,
	}
	for path, v := range want {
		got, _ := json.Marshal(ops[path])
		exp, _ := json.Marshal(v)
		if string(got) != string(exp) {
			t.Errorf("patch at %s = %s, want %s (all: %+v)", path, got, exp, resp.Patches)
		}
	}

	// A pod OpenKruise v1.9 made names its CloneSet by v1beta1.
	migrated := pod.DeepCopy()
	migrated.OwnerReferences[0].APIVersion = "apps.kruise.io/v1beta1"
	if resp := handle(handler(cs.DeepCopy(), migrated), request("ns", binding)); len(resp.Patches) == 0 {
		t.Errorf("a pod owned through apps.kruise.io/v1beta1 was left alone: %+v", resp)
	}

	withHook := cs.DeepCopy()
	withHook.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"online": "true"}}}
	for name, tc := range map[string]struct {
		h  *bindingDefaulter
		ns string
		b  *corev1.Binding
	}{
		"a preNormal hook holds the pod": {handler(withHook, pod.DeepCopy()), "ns", binding},
		"the pod is unknown":             {handler(cs.DeepCopy()), "ns", binding},
		"another pod of that name":       {handler(cs.DeepCopy(), pod.DeepCopy()), "ns", func() *corev1.Binding { b := binding.DeepCopy(); b.UID = "other"; return b }()},
		"a system namespace":             {handler(), "kube-system", binding},
		"a Deployment's pod": {handler(cs.DeepCopy(), func() *corev1.Pod {
			p := pod.DeepCopy()
			p.OwnerReferences[0].APIVersion, p.OwnerReferences[0].Kind = "apps/v1", "ReplicaSet"
			return p
		}()), "ns", binding},
	} {
		if resp := handle(tc.h, request(tc.ns, tc.b)); !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("%s: %+v, want allowed unchanged", name, resp)
		}
	}
}

// lateCache shows pods only after misses Gets or once delivered, as a
// cache whose watch has not delivered them yet.
type lateCache struct {
	client.Reader
	mu     sync.Mutex
	misses int
}

func (c *lateCache) deliver() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.misses = 0
}

func (c *lateCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, isPod := obj.(*corev1.Pod); isPod && c.misses > 0 {
		c.misses--
		return apierrors.NewNotFound(corev1.Resource("pods"), key.Name)
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	reads int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// fakeInformer hands its handler to the test.
type fakeInformer struct {
	handler toolscache.ResourceEventHandler
}

func (f *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.handler = h
	return nil, nil
}

// A bind that comes before the manager's watch has delivered the pod waits
// for the informer to deliver it, and reads from the API server only if
// the cache still does not show the pod after the wait.
func TestBindingWaitsForTheCache(t *testing.T) {
	scheme, cs, pod := bindingFixture()
	stored := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cs, pod).Build()
	binding, _ := json.Marshal(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a", UID: "pod-uid"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n"}})
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, SubResource: "binding", Namespace: "ns", Name: "web-a", Object: runtime.RawExtension{Raw: binding}}}
	bind := func(misses int, wait time.Duration, deliver bool) (patched bool, live int) {
		informer := &fakeInformer{}
		arrivals, _ := NewArrivals(informer)
		cache := &lateCache{Reader: stored, misses: misses}
		liveReader := &countingReader{Reader: stored}
		h := &bindingDefaulter{decoder: admission.NewDecoder(scheme), cache: cache, live: liveReader, now: time.Now, cacheWait: wait, arrivals: arrivals}
		m := &podadmission.Mutating{}
		m.Register("binding", h, BindingTarget)
		done := make(chan struct{})
		if deliver {
			go func() {
				defer close(done)
				// The watch delivers the pod once the bind waits for it.
				for {
					arrivals.mu.Lock()
					waiting := len(arrivals.waiters) > 0
					arrivals.mu.Unlock()
					if waiting {
						break
					}
					goruntime.Gosched()
				}
				cache.deliver()
				informer.handler.OnAdd(pod, false)
			}()
		} else {
			close(done)
		}
		resp := m.Handle(context.Background(), req)
		<-done
		return len(resp.Patches) > 0, liveReader.reads
	}
	if patched, live := bind(1<<30, time.Minute, true); !patched || live != 0 {
		t.Errorf("watch delivers the pod during the wait: patched %v, live reads %d; want patched from the cache, no live read", patched, live)
	}
	if patched, live := bind(1<<30, 20*time.Millisecond, false); !patched || live != 1 {
		t.Errorf("cache never shows the pod: patched %v, live reads %d; want patched from one live read", patched, live)
	}
}

// createdPods is what the CloneSet controller created, by key.
type createdPods map[client.ObjectKey]*corev1.Pod

func (c createdPods) Created(_ context.Context, key client.ObjectKey, _ time.Duration) (*corev1.Pod, bool) {
	p, ok := c[key]
	return p, ok
}

// A bind of a pod the controller created, before the cache shows it, is
// decided from the create's answer at once, conditioned on its version.
func TestBindingUsesTheCreatedPod(t *testing.T) {
	scheme, cs, pod := bindingFixture()
	pod.ResourceVersion = "42"
	stored := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cs).Build() // the cache: no pod yet
	binding, _ := json.Marshal(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a", UID: "pod-uid"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n"}})
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, SubResource: "binding", Namespace: "ns", Name: "web-a", Object: runtime.RawExtension{Raw: binding}}}
	bind := func(created createdPods, leading bool) (patches map[string]any, live int) {
		liveReader := &countingReader{Reader: stored}
		h := &bindingDefaulter{decoder: admission.NewDecoder(scheme), cache: stored, created: created, leading: func() bool { return leading }, live: liveReader, now: time.Now}
		m := &podadmission.Mutating{}
		m.Register("binding", h, BindingTarget)
		resp := m.Handle(context.Background(), req)
		patches = map[string]any{}
		for _, p := range resp.Patches {
			patches[p.Path] = p.Value
		}
		return patches, liveReader.reads
	}
	patches, live := bind(createdPods{client.ObjectKeyFromObject(pod): pod}, true)
	if live != 0 || patches["/metadata/resourceVersion"] != "42" {
		t.Errorf("created pod: patches %v, live reads %d; want the bind conditioned on version 42, no live read", patches, live)
	}
	if pod.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStatePreparingNormal) {
		t.Error("the bind changed the created pod it was handed")
	}
	// A pod the controller running here did not create is left to it,
	// at once: it makes the pod Normal once it sees it scheduled.
	if patches, live := bind(createdPods{}, true); live != 0 || len(patches) != 0 {
		t.Errorf("nothing created, leading: patches %v, live reads %d; want no read, no patch", patches, live)
	}
	// A standby replica created nothing: it reads the pod from the API
	// server (where the fake client does not have it either).
	if patches, live := bind(createdPods{}, false); live != 1 || len(patches) != 0 {
		t.Errorf("nothing created, standby: patches %v, live reads %d; want one live read, no patch", patches, live)
	}
}
