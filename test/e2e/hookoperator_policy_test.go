package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/hookhandlers"
)

// TestHookOperatorWritesOnlyHooks: a hook operator's identity (the
// bridge's roles, under config/rbac/policy.yaml and
// config/bridge/policy.yaml) may, on the pod of a
// workload with hooks, change the labels and finalizers those hooks name
// and its hook.lifeline.dev/ annotations and conditions, and nothing else:
// not the spec, another label, annotation or finalizer, the owners, the
// Ready condition or the pod's IP; on a pod of no workload (no
// controller-revision-hash label) or of a namespace without hooks,
// nothing; its lease only in its own namespace. Every write is a
// server-side dry run, so each is judged and none lands. The cluster admin
// is not narrowed.
func TestHookOperatorWritesOnlyHooks(t *testing.T) {
	ctx := context.Background()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path, err := local.HookOperatorKubeconfig(ctx, root, "e2e-hook-operator")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	operator := kubernetes.NewForConfigOrDie(cfg)

	hooked, hookless := newNamespace(t), newNamespace(t)
	cs := newCloneSet(hooked, "held", 1)
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{
		LabelsHandler: map[string]string{"e2e.lifeline.dev/held": "true"}, FinalizersHandler: []string{"e2e.lifeline.dev/drain"}}}
	create(t, cs)
	create(t, newCloneSet(hookless, "plain", 1))
	eventually(t, time.Minute, "the hooks published", func(ctx context.Context) (bool, string, error) {
		cm, err := client.CoreV1().ConfigMaps(cluster.ManagerNamespace).Get(ctx, hookhandlers.ConfigMapName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return cm.Data[hooked] == "finalizer:e2e.lifeline.dev/drain,label:e2e.lifeline.dev/held", fmt.Sprint(cm.Data), nil
	})
	pod := onePod(t, hooked, "app=held")
	other := onePod(t, hookless, "app=plain")
	// A pod of no workload beside the hooked one.
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: hooked, Name: "bare", Labels: map[string]string{"app": "bare"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	create(t, bare)

	type write struct {
		name, ns, pod, sub, patch string
		refusal                   string // empty: admitted; alternatives split by |
	}
	meta := func(s string) string { return `{"metadata":` + s + `}` }
	cond := func(typ, status string) string {
		return fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, typ, status)
	}
	writes := []write{
		{"its hook's label", hooked, pod, "", meta(`{"labels":{"e2e.lifeline.dev/held":"false"}}`), ""},
		{"its hook's finalizer", hooked, pod, "", meta(`{"finalizers":["e2e.lifeline.dev/drain"]}`), ""},
		{"its record", hooked, pod, "", meta(`{"annotations":{"hook.lifeline.dev/registry":"x"}}`), ""},
		{"its condition", hooked, pod, "status", cond("hook.lifeline.dev/registry", "False"), ""},
		{"the spec", hooked, pod, "", `{"spec":{"activeDeadlineSeconds":1}}`, "may not change a pod's spec"},
		{"another label", hooked, pod, "", meta(`{"labels":{"app":"elsewhere"}}`), "not app"},
		{"another finalizer", hooked, pod, "", meta(`{"finalizers":["example.com/keep"]}`), "not example.com/keep"},
		{"another annotation", hooked, pod, "", meta(`{"annotations":{"example.com/a":"x"}}`), "not example.com/a"},
		// (OwnerReferencesPermissionEnforcement may refuse it first.)
		{"the owners", hooked, pod, "", meta(`{"ownerReferences":null}`), "may not change a pod's owners|cannot set an ownerRef"},
		{"the Ready condition", hooked, pod, "status", cond("Ready", "False"), "only hook.lifeline.dev/ conditions"},
		{"the pod's IP", hooked, pod, "status", `{"status":{"podIP":"10.9.9.9","podIPs":[{"ip":"10.9.9.9"}]}}`, "other than its hook.lifeline.dev/ conditions"},
		{"a pod without hooks", hookless, other, "", meta(`{"annotations":{"hook.lifeline.dev/registry":"x"}}`), "declares lifecycle hooks"},
		// The hook handlers' policy matches only pods labelled
		// controller-revision-hash; the identities' refuses the rest, and
		// a pod given the label is judged by both.
		{"a pod of no workload", hooked, bare.Name, "", meta(`{"annotations":{"hook.lifeline.dev/registry":"x"}}`), "only pods of a workload's revision"},
		{"its hook's label on a pod of no workload", hooked, bare.Name, "", meta(`{"labels":{"e2e.lifeline.dev/held":"false"}}`), "only pods of a workload's revision"},
		{"a condition of a pod of no workload", hooked, bare.Name, "status", cond("hook.lifeline.dev/registry", "False"), "only pods of a workload's revision"},
		{"labelling a pod with a revision", hooked, bare.Name, "", meta(`{"labels":{"controller-revision-hash":"x"}}`), "not controller-revision-hash"},
	}
	// A policy is in force a moment after it is created (the API server
	// watches them): the first refusal says it is.
	eventually(t, 30*time.Second, "the hook operators' policies in force", func(ctx context.Context) (bool, string, error) {
		_, spec := operator.CoreV1().Pods(hooked).Patch(ctx, pod, types.StrategicMergePatchType, []byte(writes[4].patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		_, label := operator.CoreV1().Pods(hooked).Patch(ctx, pod, types.StrategicMergePatchType, []byte(writes[5].patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return spec != nil && label != nil, fmt.Sprintf("spec: %v; label: %v", spec, label), nil
	})
	for _, w := range writes {
		var subs []string
		if w.sub != "" {
			subs = append(subs, w.sub)
		}
		// Strategic: a condition merges into the list by its type.
		patchType := types.StrategicMergePatchType
		if strings.Contains(w.patch, "podIPs") {
			patchType = types.MergePatchType // the list replaced, one IP per family
		}
		_, err := operator.CoreV1().Pods(w.ns).Patch(ctx, w.pod, patchType, []byte(w.patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, subs...)
		switch {
		case w.refusal == "" && err != nil:
			t.Errorf("%s: refused (%v), want admitted", w.name, err)
		case w.refusal != "" && (err == nil || !containsAny(err.Error(), strings.Split(w.refusal, "|"))):
			t.Errorf("%s: %v, want refused with %q", w.name, err, w.refusal)
		case w.refusal == "":
			// The cluster admin is not narrowed.
		default:
			if _, err := client.CoreV1().Pods(w.ns).Patch(ctx, w.pod, patchType, []byte(w.patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, subs...); err != nil && strings.Contains(err.Error(), "hook operator") {
				t.Errorf("%s by the cluster admin: %v, want the policy to leave it alone", w.name, err)
			}
		}
	}

	// Without the published handlers (the ConfigMap deleted), nobody
	// else's pod writes are refused (the kubelets' status updates among
	// them), and the manager publishes again at the next change of a
	// workload's hooks.
	if err := client.CoreV1().ConfigMaps(cluster.ManagerNamespace).Delete(ctx, hookhandlers.ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(hookless).Patch(ctx, other, types.StrategicMergePatchType, []byte(meta(`{"labels":{"e2e":"x"}}`)),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the cluster admin's pod update without the handlers published: %v", err)
	}
	if err := k8s.Patch(ctx, cs, ctrlclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"lifecycle":{"preDelete":{"labelsHandler":{"e2e.lifeline.dev/second":"true"}}}}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the hooks published again", func(ctx context.Context) (bool, string, error) {
		cm, err := client.CoreV1().ConfigMaps(cluster.ManagerNamespace).Get(ctx, hookhandlers.ConfigMapName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.Contains(cm.Data[hooked], "label:e2e.lifeline.dev/second"), fmt.Sprint(cm.Data), nil
	})

	// Its lease in its own namespace, no other.
	if _, err := operator.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("reading kube-scheduler's lease: %v, want forbidden", err)
	}
	if _, err := operator.CoordinationV1().Leases(cluster.ManagerNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		t.Errorf("listing leases in %s: admitted, want forbidden (get, create and update only)", cluster.ManagerNamespace)
	}
}

// onePod waits for a pod matching selector in ns and returns its name.
func onePod(t *testing.T, ns, selector string) string {
	t.Helper()
	var name string
	eventually(t, time.Minute, "a pod of "+selector, func(ctx context.Context) (bool, string, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(pods.Items) == 0 {
			return false, fmt.Sprint(err), nil
		}
		name = pods.Items[0].Name
		return true, "", nil
	})
	return name
}

func containsAny(s string, parts []string) bool {
	for _, p := range parts {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
