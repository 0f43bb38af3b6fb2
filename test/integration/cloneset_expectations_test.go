package integration

import (
	"context"
	"testing"
	"time"

	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/phases"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	clonesetcontroller "github.com/lifeline-k8s/lifeline/internal/cloneset/controller"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

// laggingCache hides pods younger than lag from List, as an informer cache
// far behind the API server would.
type laggingCache struct {
	client.Client
	lag time.Duration
}

func (c laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if pods, ok := list.(*corev1.PodList); ok {
		cutoff := time.Now().Add(-c.lag)
		visible := pods.Items[:0]
		for _, p := range pods.Items {
			if p.CreationTimestamp.Time.Before(cutoff) {
				visible = append(visible, p)
			}
		}
		pods.Items = visible
	}
	return nil
}

// runCloneSetController runs the CloneSet controller for one test, reading
// and writing through wrap(the manager's client): a test's way to distort
// what the controller sees.
func runCloneSetController(t *testing.T, wrap func(client.Client) client.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     manager.Scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &clonesetcontroller.Reconciler{Shell: phases.Shell{
		Client:    conversion.HubClient(wrap(mgr.GetClient())),
		APIReader: manager.HubReader(mgr),
		Recorder:  mgr.GetEventRecorder("cloneset-controller"),
	}}
	if err := ownerindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
}

// TestCloneSetDoesNotCreateTwiceWhenTheCacheLags: the controller plans from
// its cache; expectations make it wait for its own creations to show there
// instead of creating them again.
func TestCloneSetDoesNotCreateTwiceWhenTheCacheLags(t *testing.T) {
	ctx := context.Background()
	runCloneSetController(t, func(c client.Client) client.Client { return laggingCache{Client: c, lag: 3 * time.Second} })

	ns := newNamespace(t)
	cs := &appsv1alpha1.CloneSet{}
	loadSample(t, "cloneset-lifecycle-demo.yaml", cs)
	cs.Namespace = ns
	cs.Spec.Replicas = ptr.To[int32](10)
	cs.Spec.Lifecycle = nil
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	// No scheduler runs here, so pods stay Pending and the count is all
	// there is to converge on.
	var pods corev1.PodList
	poll(t, "10 pods visible to the lagging cache, and status saying so", func(ctx context.Context) bool {
		if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false
		}
		got := &appsv1alpha1.CloneSet{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(cs), got) == nil && got.Status.Replicas == 10 &&
			pods.Items[0].CreationTimestamp.Time.Before(time.Now().Add(-4*time.Second))
	})
	if len(pods.Items) != 10 {
		t.Fatalf("%d pods for 10 replicas: the controller acted on its stale cache", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || metav1.GetControllerOf(&p) == nil {
			t.Errorf("pod %s: %+v", p.Name, p.ObjectMeta)
		}
	}
}
