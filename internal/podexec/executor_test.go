package podexec

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// owner stands in for any workload: a ConfigMap is enough for events and
// expectations.
type owner struct{ obj *corev1.ConfigMap }

func (o owner) Object() client.Object { return o.obj }
func (o owner) NewPod(a podlife.CreatePod) (*corev1.Pod, []*corev1.PersistentVolumeClaim, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + a.InstanceID,
		Labels: map[string]string{pub.LifecycleStateKey: string(a.State)}}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-web-" + a.InstanceID}}
	return pod, []*corev1.PersistentVolumeClaim{claim}, nil
}

func testbed(objs ...client.Object) (*Executor, client.Client, owner) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	w := owner{obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "owner-uid"}}}
	e := &Executor{Client: c, Recorder: events.NewFakeRecorder(50), Clock: clocktesting.NewFakeClock(time.Now()), Expectations: NewExpectations(time.Minute)}
	return e, c, w
}

func exists(t *testing.T, c client.Client, obj client.Object, name string) bool {
	t.Helper()
	err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, obj)
	if err != nil && client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

func TestExecutorCarriesOutEachKindOfAction(t *testing.T) {
	ctx := context.Background()
	ownerRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web", UID: "owner-uid", Controller: ptr.To(true)}
	doomed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-old", UID: "old-uid"}}
	doomedClaim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-web-old", UID: "c1"}}
	stray := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-stray", UID: "stray-uid", OwnerReferences: []metav1.OwnerReference{ownerRef}}}
	normal := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-n", UID: "n-uid",
		Labels: map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStatePreparingNormal)}}}
	loose := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-web-gone", UID: "c2"}}
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-orphan", UID: "orphan-uid"}}
	e, c, w := testbed(doomed, doomedClaim, stray, normal, loose, orphan)

	var write podlife.PodWrite
	write.SetLabel(pub.LifecycleStateKey, string(pub.LifecycleStateNormal))
	errs := e.Execute(ctx, w, []podlife.Action{
		podlife.CreatePod{InstanceID: "new", State: pub.LifecycleStatePreparingNormal, Reason: "replicas"},
		podlife.DeletePod{Pod: doomed, Claims: []*corev1.PersistentVolumeClaim{doomedClaim}, Reason: "scale-in"},
		podlife.ReleasePod{Pod: stray, OwnerUID: "owner-uid", Reason: "unselected"},
		podlife.SetState{Pod: normal, From: pub.LifecycleStatePreparingNormal, To: pub.LifecycleStateNormal, Writes: []podlife.PodWrite{write}},
		podlife.DeleteClaim{Claim: loose},
		podlife.AdoptPod{Pod: orphan, Owner: ownerRef, Reason: "selected"},
	})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if !exists(t, c, &corev1.Pod{}, "web-new") || !exists(t, c, &corev1.PersistentVolumeClaim{}, "data-web-new") {
		t.Error("CreatePod did not create the pod and its claim")
	}
	if exists(t, c, &corev1.Pod{}, "web-old") || exists(t, c, &corev1.PersistentVolumeClaim{}, "data-web-old") {
		t.Error("DeletePod left the pod or its claim")
	}
	released := &corev1.Pod{}
	if exists(t, c, released, "web-stray"); len(released.OwnerReferences) != 0 {
		t.Errorf("ReleasePod left owner references %v", released.OwnerReferences)
	}
	adopted := &corev1.Pod{}
	if exists(t, c, adopted, "web-orphan"); metav1.GetControllerOf(adopted) == nil || metav1.GetControllerOf(adopted).UID != "owner-uid" {
		t.Errorf("AdoptPod left owner references %v", adopted.OwnerReferences)
	}
	moved := &corev1.Pod{}
	if exists(t, c, moved, "web-n"); moved.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) {
		t.Errorf("SetState left labels %v", moved.Labels)
	}
	if exists(t, c, &corev1.PersistentVolumeClaim{}, "data-web-gone") {
		t.Error("DeleteClaim left the claim")
	}
	// The creation, the deletion and the pod write are expected, so the
	// next plan waits for the cache to show them.
	pending := e.Expectations.byOwner[client.ObjectKeyFromObject(w.obj)]
	for name, kind := range map[string]expectationKind{"web-new": expectCreated, "web-old": expectDeleted, "web-n": expectChanged} {
		if x, ok := pending[name]; !ok || x.kind != kind {
			t.Errorf("expectation for %s: %+v (%v), want kind %d", name, x, ok, kind)
		}
	}
}

func TestCreationsStopAtTheFirstFailingBatch(t *testing.T) {
	existing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a"}}
	e, c, w := testbed(existing)
	// The first batch (one pod) fails: its name is taken. None of the
	// other three is tried.
	errs := e.Execute(context.Background(), w, []podlife.Action{
		podlife.CreatePod{InstanceID: "a"}, podlife.CreatePod{InstanceID: "b"}, podlife.CreatePod{InstanceID: "c"}, podlife.CreatePod{InstanceID: "d"},
	})
	if len(errs) != 1 {
		t.Fatalf("errors %v, want the first batch's only", errs)
	}
	for _, id := range []string{"b", "c", "d"} {
		if exists(t, c, &corev1.Pod{}, "web-"+id) {
			t.Errorf("web-%s was created after the first batch failed", id)
		}
	}
}

// A pod recreated under its instance id whose claim is still being deleted
// (its predecessor's) is not created: it would wait unschedulable for a
// claim nobody makes once the old one goes. The create comes back stale,
// to be planned again; a live claim of that name is used as it is.
func TestCreateWaitsForAClaimStillBeingDeleted(t *testing.T) {
	ctx := context.Background()
	going := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-web-a",
		DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"kubernetes.io/pvc-protection"}}}
	kept := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-web-b"}}
	e, c, w := testbed(going, kept)
	errs := e.Execute(ctx, w, []podlife.Action{podlife.CreatePod{InstanceID: "a", State: pub.LifecycleStateNormal}})
	var stale *StaleError
	if len(errs) != 1 || !errors.As(errs[0], &stale) {
		t.Fatalf("errors %v, want one StaleError", errs)
	}
	if exists(t, c, &corev1.Pod{}, "web-a") {
		t.Error("web-a created against a claim being deleted")
	}
	if errs := e.Execute(ctx, w, []podlife.Action{podlife.CreatePod{InstanceID: "b", State: pub.LifecycleStateNormal}}); len(errs) != 0 {
		t.Fatalf("with a live claim: %v", errs)
	}
	if !exists(t, c, &corev1.Pod{}, "web-b") {
		t.Error("web-b not created on its existing claim")
	}
}

// A delete is conditional on the version planned from: a pod that changed
// meanwhile (a hook label added by an operator registering it) is not
// deleted but planned again.
func TestDeleteOfAChangedPodIsStale(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a", UID: "a-uid"}}
	e, c, w := testbed(pod)
	planned := &corev1.Pod{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "web-a"}, planned); err != nil {
		t.Fatal(err)
	}
	changed := planned.DeepCopy()
	changed.Labels = map[string]string{"example.com/registered": "true"}
	if err := c.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	errs := e.Execute(ctx, w, []podlife.Action{podlife.DeletePod{Pod: planned, Reason: "scale in"}})
	var stale *StaleError
	if len(errs) != 1 || !errors.As(errs[0], &stale) {
		t.Fatalf("errors %v, want one StaleError", errs)
	}
	if !exists(t, c, &corev1.Pod{}, "web-a") {
		t.Fatal("the changed pod was deleted")
	}
	if errs := e.Execute(ctx, w, []podlife.Action{podlife.DeletePod{Pod: changed, Reason: "scale in"}}); len(errs) != 0 {
		t.Fatalf("planned from the current version: %v", errs)
	}
	if exists(t, c, &corev1.Pod{}, "web-a") {
		t.Error("the pod planned from its current version was not deleted")
	}
}

// Creates refused because the namespace is going are no failure and post
// no Event, as for the ReplicaSet controller; any other refusal is both.
func TestCreatesInANamespaceGoingPostNothing(t *testing.T) {
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `pods "web-a" is forbidden: unable to create new content in namespace ns because it is being terminated`,
		Details: &metav1.StatusDetails{Name: "web-a", Kind: "pods", Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}}}}}
	for _, c := range []struct {
		name   string
		err    error
		failed bool
	}{
		{"terminating", terminating, false},
		{"gone", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns"), false},
		{"a quota", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-a", errors.New("exceeded quota")), true},
	} {
		for _, refused := range []string{"pod", "claim"} {
			e, _, w := testbed()
			rec := events.NewFakeRecorder(10)
			e.Recorder = rec
			creates := 0
			e.Client = interceptor.NewClient(e.Client.(client.WithWatch), interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, pod := obj.(*corev1.Pod); pod != (refused == "pod") {
					return cl.Create(ctx, obj, opts...)
				}
				creates++
				return c.err
			}})
			failed, stale := e.Run(context.Background(), w, []podlife.Action{podlife.CreatePod{InstanceID: "a"}, podlife.CreatePod{InstanceID: "b"}})
			if (failed != nil) != c.failed || stale || (len(rec.Events) > 0) != c.failed || creates != 1 {
				t.Errorf("%s, the %s refused: failed %v, stale %v, %d Events, %d creates tried; want failed and an Event: %v, one create", c.name, refused, failed, stale, len(rec.Events), creates, c.failed)
			}
		}
	}
}
