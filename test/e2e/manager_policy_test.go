package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// TestManagerWritesOnlyItsOwn: as the manager's identity (its roles, under
// config/rbac/policy.yaml), by server-side dry run, each write the manager
// makes is admitted, and each write its roles allow but its work never
// makes is refused: a namespace label other than the protection labels, a
// webhook configuration's rules or URL, a CRD's versions or labels, a pod
// its workloads do not control (relabelled, deleted, created without an
// owner), and a pod spec change other than an image.
func TestManagerWritesOnlyItsOwn(t *testing.T) {
	ctx := context.Background()
	cfg := rest.CopyConfig(local.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "lifeline-manager", Groups: []string{cluster.ManagersGroup, "system:authenticated"}}
	manager := kubernetes.NewForConfigOrDie(cfg)
	crds := apiextensionsclient.NewForConfigOrDie(cfg)

	ns := newNamespace(t)
	cs := newCloneSet(ns, "own", 1)
	create(t, cs)
	create(t, newDeployment(ns, "theirs", 1))
	own, theirs := onePod(t, ns, "app=own"), onePod(t, ns, "app=theirs")
	dry := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	otherCA, _, err := certutil.GenerateSelfSignedCertKey("another-ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	merge := func(s string) []byte { return []byte(s) }
	type write struct {
		name    string
		send    func() error
		refusal string // empty: admitted
	}
	podPatch := func(pod, patch string) func() error {
		return func() error {
			_, err := manager.CoreV1().Pods(ns).Patch(ctx, pod, types.StrategicMergePatchType, merge(patch), dry)
			return err
		}
	}
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "m", Image: "nginx"}}}}
	writes := []write{
		{"a namespace's protection label", func() error {
			_, err := manager.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, merge(`{"metadata":{"labels":{"protection.lifeline.dev/disruptions":"true"}}}`), dry)
			return err
		}, ""},
		{"a namespace's pod security level", func() error {
			_, err := manager.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, merge(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`), dry)
			return err
		}, "protection.lifeline.dev/ labels"},
		{"its webhook configuration's caBundle", func() error {
			_, err := manager.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, "lifeline-validating-webhooks", types.JSONPatchType,
				merge(`[{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":"Zm9v"}]`), dry)
			return err
		}, ""},
		{"its webhook configuration's rules", func() error {
			_, err := manager.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, "lifeline-validating-webhooks", types.JSONPatchType,
				merge(`[{"op":"add","path":"/webhooks/0/rules/-","value":{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["secrets"]}}]`), dry)
			return err
		}, "only its webhook configurations' caBundle"},
		{"a CRD's conversion", updateCRD(ctx, crds, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion.Webhook.ClientConfig.CABundle = otherCA
		}), ""},
		{"a CRD's versions", updateCRD(ctx, crds, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Served = false
		}), "only a CRD's conversion"},
		{"its pod's image", podPatch(own, `{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}`), ""},
		{"its pod's labels", podPatch(own, `{"metadata":{"labels":{"lifecycle.apps.kruise.io/state":"Normal"}}}`), ""},
		// (The API server itself lets a toleration be added, not changed.)
		{"its pod's tolerations", func() error {
			_, err := manager.CoreV1().Pods(ns).Patch(ctx, own, types.JSONPatchType, merge(`[{"op":"add","path":"/spec/tolerations/-","value":{"operator":"Exists"}}]`), dry)
			return err
		}, "only container images"},
		{"another pod's related-pub annotation", podPatch(theirs, `{"metadata":{"annotations":{"pub.kruise.io/related-pub":"x"}}}`), ""},
		{"another pod's labels", podPatch(theirs, `{"metadata":{"labels":{"app":"moved"}}}`), "only the related-pub annotations"},
		{"another pod deleted", func() error {
			return manager.CoreV1().Pods(ns).Delete(ctx, theirs, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}, "deletes only pods its workloads control"},
		{"a pod without an owner created", func() error {
			_, err := manager.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, "creates only pods its workloads control"},
	}
	for _, w := range writes {
		err := w.send()
		switch {
		case w.refusal == "" && err != nil:
			t.Errorf("%s: refused (%v), want admitted", w.name, err)
		case w.refusal != "" && (err == nil || !strings.Contains(err.Error(), w.refusal)):
			t.Errorf("%s: %v, want refused with %q", w.name, err, w.refusal)
		}
	}

}

// updateCRD sends f's change to the CloneSet CRD as the manager sends one,
// an update (its role has no patch), dry run.
func updateCRD(ctx context.Context, crds apiextensionsclient.Interface, f func(*apiextensionsv1.CustomResourceDefinition)) func() error {
	return func() error {
		crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "clonesets.apps.kruise.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		f(crd)
		_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
}
