package migration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

// The kinds Lifeline takes over.
var swapped = []string{"clonesets.apps.kruise.io", "persistentpodstates.apps.kruise.io", "podunavailablebudgets.policy.kruise.io"}

var (
	kruise        *cluster.OpenKruise
	kruiseRunning bool
	lifeline      *cluster.Lifeline
)

// ensureOpenKruise starts OpenKruise's manager, installing its module's
// config, unless it runs.
func ensureOpenKruise(t *testing.T) {
	t.Helper()
	if kruiseRunning {
		return
	}
	ctx := context.Background()
	var err error
	if kruise == nil {
		kruise, err = local.StartOpenKruise(ctx, os.Stderr)
	} else {
		err = local.StartOpenKruiseAgain(ctx, kruise)
	}
	if err != nil {
		t.Fatalf("starting OpenKruise: %v (log %s)", err, local.LogFile("kruise-manager"))
	}
	kruiseRunning = true
}

// TestSwapOpenKruiseAndLifeline swaps the manager under running workloads,
// from OpenKruise to Lifeline and back, first with the module's CRDs
// (v1beta1 stored), then with CRDs that store v1alpha1 as the v1.9.0 git
// tag's do.
func TestSwapOpenKruiseAndLifeline(t *testing.T) {
	consul, err := local.StartConsulRegistry(context.Background(), "consul-migration")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(consul.Name, syscall.SIGTERM) })

	t.Run("module CRDs, v1beta1 stored", func(t *testing.T) {
		ensureOpenKruise(t)
		w := createUnderOpenKruise(t, consul.Endpoint, true)
		requireStoredVersions(t, "v1beta1")
		swapToLifeline(t)
		checkAfterSwap(t, w, consul.Endpoint)
		afterLifeline := snapshot(t, w.ns)
		swapToOpenKruise(t)
		checkBackUnderOpenKruise(t, w, afterLifeline, consul.Endpoint)
	})
	if t.Failed() {
		return
	}
	t.Run("v1alpha1 stored, as the v1.9.0 tag's CRDs", func(t *testing.T) {
		reinstallOpenKruiseStoringV1alpha1(t)
		w := createUnderOpenKruise(t, consul.Endpoint, false)
		requireStoredVersions(t, "v1alpha1")
		swapToLifeline(t)
		checkAfterSwap(t, w, consul.Endpoint)
		// Lifeline stores v1beta1: the objects it wrote are v1beta1 now.
		requireStoredVersions(t, "v1alpha1", "v1beta1")
	})
}

// swapToLifeline stops OpenKruise, removes its webhook configurations,
// puts Lifeline's CRDs over the same kinds (an update of each CRD, as
// kubectl replace or a server-side apply does in a cluster) and starts
// Lifeline as make dev does.
func swapToLifeline(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := local.StopProcess(kruise.Name, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	kruiseRunning = false
	deleteWebhookConfigurations(t, "kruise-mutating-webhook-configuration", "kruise-validating-webhook-configuration")
	if _, err := envtest.InstallCRDs(local.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root(t), "config", "crd", "bases")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	var err error
	if lifeline, err = local.StartLifeline(ctx, cluster.LifelineOptions{Root: root(t), Dir: local.Dir}); err != nil {
		t.Fatalf("starting Lifeline: %v (log %s)", err, local.LogFile("lifeline-manager"))
	}
}

// swapToOpenKruise goes back: Lifeline stopped and its webhook
// configurations removed, the module's CRDs and webhook configurations
// put back, OpenKruise started.
func swapToOpenKruise(t *testing.T) {
	t.Helper()
	if err := local.StopProcess(lifeline.Name, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deleteWebhookConfigurations(t, "lifeline-mutating-webhooks", "lifeline-validating-webhooks")
	installKruiseManifests(t, kruise.Manifests)
	ensureOpenKruise(t)
}

// checkBackUnderOpenKruise: going back restarts nothing either, and
// OpenKruise runs what Lifeline left.
func checkBackUnderOpenKruise(t *testing.T, w *workloads, before map[string]podFacts, consul string) {
	after := snapshot(t, w.ns)
	for name, b := range before {
		if a, ok := after[name]; !ok || a.uid != b.uid || a.restarts != b.restarts {
			t.Errorf("pod %s changed going back to OpenKruise: %+v → %+v", name, b, a)
		}
	}
	if !t.Failed() {
		t.Logf("Lifeline → OpenKruise: %d pods carried over, 0 deleted or recreated, 0 containers restarted", len(before))
	}
	patchCloneSet(t, w.ns, "web", `{"spec":{"replicas":3}}`)
	waitPods(t, w.ns, "app=web", "OpenKruise scales the CloneSet Lifeline ran", func(pods []corev1.Pod) bool {
		return len(pods) == 3 && all(pods, func(p corev1.Pod) bool {
			return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal) && p.Labels["controller-revision-hash"] == w.updateRevision
		})
	})
}

// reinstallOpenKruiseStoringV1alpha1 starts from CRDs that store v1alpha1:
// the module's CRDs with v1alpha1 as the storage version (the module's
// manager reads v1beta1, so both stay served). A new CRD's
// status.storedVersions is then [v1alpha1], and every object is stored as
// v1alpha1, as on a cluster installed from the v1.9.0 tag.
func reinstallOpenKruiseStoringV1alpha1(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if kruiseRunning {
		if err := local.StopProcess(kruise.Name, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		kruiseRunning = false
	}
	deleteWebhookConfigurations(t, "kruise-mutating-webhook-configuration", "kruise-validating-webhook-configuration",
		"lifeline-mutating-webhooks", "lifeline-validating-webhooks")
	if lifeline != nil {
		_ = local.StopProcess(lifeline.Name, syscall.SIGTERM)
	}
	c := crdClient(t)
	for _, name := range swapped {
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Delete(ctx, crd); ctrlclient.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 2*time.Minute, "the CRDs deleted", func(ctx context.Context) (bool, string, error) {
		for _, name := range swapped {
			if err := c.Get(ctx, ctrlclient.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
				return false, name + " still there", nil
			}
		}
		return true, "", nil
	})
	var manifests []*unstructured.Unstructured
	for _, obj := range kruise.Manifests {
		obj = obj.DeepCopy()
		if obj.GetKind() == "CustomResourceDefinition" && slices.Contains(swapped, obj.GetName()) {
			versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
			for _, v := range versions {
				v := v.(map[string]any)
				v["storage"] = v["name"] == "v1alpha1"
			}
			if err := unstructured.SetNestedSlice(obj.Object, versions, "spec", "versions"); err != nil {
				t.Fatal(err)
			}
		}
		manifests = append(manifests, obj)
	}
	installKruiseManifests(t, manifests)
	ensureOpenKruise(t)
}

// installKruiseManifests installs manifests as the bench does (replacing
// Lifeline's CRDs, conversion stanza and all) and waits until every CRD
// serves.
func installKruiseManifests(t *testing.T, manifests []*unstructured.Unstructured) {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, obj := range manifests {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	if err := local.Install(context.Background(), manifests); err != nil {
		t.Fatal(err)
	}
	if err := envtest.WaitForCRDs(local.Config, crds, envtest.CRDInstallOptions{}); err != nil {
		t.Fatal(err)
	}
}

func requireStoredVersions(t *testing.T, want ...string) {
	t.Helper()
	c := crdClient(t)
	for _, name := range swapped {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(context.Background(), ctrlclient.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(slices.Values(crd.Status.StoredVersions))
		if !slices.Equal(got, want) {
			t.Errorf("%s stores %v, want %v", name, got, want)
		}
	}
}

func deleteWebhookConfigurations(t *testing.T, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		err = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

func crdClient(t *testing.T) ctrlclient.Client {
	t.Helper()
	c, err := testenv.Client(local.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func root(t *testing.T) string {
	t.Helper()
	r, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
