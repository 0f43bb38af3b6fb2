package hook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// world is a CloneSet with seed 001's inPlaceUpdate hook and one pod held
// for its update, in a fake API server.
func world(t *testing.T, funcs interceptor.Funcs) (client.Client, *corev1.Pod) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cs := &appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "cs-uid"}}
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}}}
	p := pod(pub.LifecycleStatePreparingUpdate, true, label(registered, "true"))
	p.Namespace = "ns"
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs-uid", Controller: ptrTrue()}}
	if funcs.SubResourcePatch == nil {
		funcs.SubResourcePatch = statusPatchAsTheAPIServer
	}
	patch := funcs.Patch
	funcs.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		var err error
		if patch != nil {
			err = patch(ctx, c, obj, p, opts...)
		} else {
			err = c.Patch(ctx, obj, p, opts...)
		}
		return asTheAPIServer(obj, err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cs, p).WithStatusSubresource(&corev1.Pod{}).WithInterceptorFuncs(funcs).Build()
	return c, p
}

// asTheAPIServer turns the fake client's failed JSON patch test into what
// the API server answers: a bare 422.
func asTheAPIServer(obj client.Object, err error) error {
	if err != nil && strings.Contains(err.Error(), "test failed") {
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{Resource: "pods"}, obj.GetName(), err.Error(), 0, false)
	}
	return err
}

// statusPatchAsTheAPIServer applies a pods/status JSON patch as the API
// server does, metadata included (the fake client keeps only the status).
func statusPatchAsTheAPIServer(ctx context.Context, c client.Client, subResource string, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
	current := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return err
	}
	data, err := p.Data(obj)
	if err != nil {
		return err
	}
	patch, err := jsonpatch.DecodePatch(data)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(current)
	if err != nil {
		return err
	}
	if raw, err = patch.Apply(raw); err != nil {
		return asTheAPIServer(obj, err)
	}
	next := &corev1.Pod{}
	if err := json.Unmarshal(raw, next); err != nil {
		return err
	}
	main := next.DeepCopy()
	if err := c.Update(ctx, main); err != nil {
		return err
	}
	next.ResourceVersion = main.ResourceVersion
	return c.Status().Update(ctx, next)
}

func ptrTrue() *bool { b := true; return &b }

func newOperator(c client.Client, h Handlers, o Options) *operator {
	o.Name = "registry"
	if o.Clock == nil {
		o.Clock = clocktesting.NewFakeClock(now)
	}
	return &operator{client: c, recorder: events.NewFakeRecorder(100), handlers: h, opts: withDefaults(o), handled: map[types.NamespacedName]string{}}
}

func request(p *corev1.Pod) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}}
}

// A release that fails because the pod changed meanwhile is written again
// without calling the handler a second time: one external effect.
func TestReleaseRetriedWithoutCallingAgain(t *testing.T) {
	stale := true
	c, p := world(t, interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if stale {
			stale = false
			// Someone else's label change lands first: the release's
			// guard on the labels fails.
			other := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
				return err
			}
			other.Labels["someone"] = "else"
			if err := c.Update(ctx, other); err != nil {
				return err
			}
		}
		return c.Patch(ctx, obj, patch, opts...)
	}})
	calls := 0
	op := newOperator(c, Handlers{BeforeUpdate: func(context.Context, Event) error { calls++; return nil }}, Options{})
	if _, err := op.Reconcile(context.Background(), request(p)); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Reconcile(context.Background(), request(p)); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || got.Labels[registered] != "false" {
		t.Fatalf("handler called %d times, hook label %q; want once, released", calls, got.Labels[registered])
	}
	if m, rev, ok := LastMoment(got, "registry"); !ok || m != BeforeUpdate || rev != "web-1" {
		t.Errorf("record %v %s %v", m, rev, ok)
	}
}

// A handler that keeps failing never releases the hook; past the timeout
// the pod is flagged, and the flag is cleared with the release once the
// handler succeeds.
func TestFailingHandlerHoldsAndFlags(t *testing.T) {
	c, p := world(t, interceptor.Funcs{})
	clock := clocktesting.NewFakeClock(now)
	fail := true
	op := newOperator(c, Handlers{BeforeUpdate: func(context.Context, Event) error {
		if fail {
			return errors.New("registry down")
		}
		return nil
	}}, Options{Timeout: 2 * time.Minute, Clock: clock})
	read := func() *corev1.Pod {
		got := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if _, err := op.Reconcile(context.Background(), request(p)); err == nil {
		t.Fatal("a failing handler's reconcile succeeded")
	}
	if got := read(); got.Labels[registered] != "true" {
		t.Fatal("released while the handler fails")
	}
	if _, flagged := flag(read(), "registry"); flagged {
		t.Fatal("flagged before the timeout (the moment became due a minute ago)")
	}
	clock.Step(2 * time.Minute)
	_, _ = op.Reconcile(context.Background(), request(p))
	got := read()
	if c, ok := flag(got, "registry"); !ok || c.Status != corev1.ConditionFalse || c.Reason != "HandlerTimeout" {
		t.Fatalf("not flagged past the timeout: %+v", got.Status.Conditions)
	}
	if got.Labels[registered] != "true" {
		t.Fatal("released because the handler kept failing")
	}
	fail = false
	if _, err := op.Reconcile(context.Background(), request(got)); err != nil {
		t.Fatal(err)
	}
	got = read()
	if c, _ := flag(got, "registry"); got.Labels[registered] != "false" || c.Status != corev1.ConditionTrue || c.Reason != "Completed" {
		t.Errorf("after success: label %q, flag %+v", got.Labels[registered], c)
	}
}

// A panicking handler is a failing handler, not a dead operator.
func TestPanickingHandlerFails(t *testing.T) {
	c, p := world(t, interceptor.Funcs{})
	op := newOperator(c, Handlers{BeforeUpdate: func(context.Context, Event) error { panic("boom") }}, Options{})
	if _, err := op.Reconcile(context.Background(), request(p)); err == nil {
		t.Fatal("a panicking handler's reconcile succeeded")
	}
}
