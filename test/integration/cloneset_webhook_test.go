package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/manager"
	"github.com/lifeline-k8s/lifeline/internal/webhookcerts"
)

// withWebhooks runs Lifeline's webhooks for one test as lifeline-manager
// runs them: self-managed certificates in a Secret, the CA patched into the
// webhook configurations, the API server calling over TLS on loopback.
func withWebhooks(t *testing.T) client.Reader {
	t.Helper()
	_, _, cache := startWebhooks(t, webhookcerts.Options{}, "")
	return cache
}

// startWebhooks is withWebhooks with certificate options and folder (a new
// one when empty); it returns the Secret the certificate is kept in and the
// folder it is copied to, and the cache the webhooks read. Once the readiness check passes, the server must
// serve the Secret's certificate, not whatever the folder held before.
func startWebhooks(t *testing.T, certs webhookcerts.Options, certDir string) (types.NamespacedName, string, client.Reader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	names := cluster.WebhookNames{Mutating: "it-mutating-" + t.Name(), Validating: "it-validating-" + t.Name()}
	names.Mutating, names.Validating = strings.ToLower(names.Mutating), strings.ToLower(names.Validating)
	remove, err := cluster.InstallWebhooks(ctx, cfg, filepath.Join(repoRoot, "config", "webhook", "manifests.yaml"), "localhost", ports[0], names)
	if err != nil {
		t.Fatal(err)
	}
	if certDir == "" {
		certDir = t.TempDir()
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        manager.Scheme(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		Controller:    config.Controller{SkipNameValidation: ptr.To(true)},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: ports[0], CertDir: certDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	certs.Secret = types.NamespacedName{Namespace: newNamespace(t), Name: "webhook-certs"}
	certs.DNSName, certs.CertDir = "localhost", certDir
	certs.MutatingConfiguration, certs.ValidatingConfiguration = names.Mutating, names.Validating
	certs.ControllerName = "cert-rotator-" + strings.ToLower(t.Name())
	ready, err := webhookcerts.Manage(mgr, certs)
	if err != nil {
		t.Fatal(err)
	}
	lifeline, err := manager.New(manager.Features())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	go func() {
		select {
		case <-ready:
			lifeline.SetupWebhooks(mgr, "lifeline-manager")
		case <-ctx.Done():
		}
	}()
	t.Cleanup(func() {
		if err := remove(context.Background()); err != nil {
			t.Error(err)
		}
		cancel()
		<-done
	})
	check := manager.WebhooksReadyCheck(mgr, ready)
	poll(t, "webhooks serving", func(context.Context) bool {
		req, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
		return check(req) == nil
	})
	secret := &corev1.Secret{}
	if err := k8s.Get(ctx, certs.Secret, secret); err != nil {
		t.Fatal(err)
	}
	if served := servedCertificate(t, ports[0]); !bytes.Equal(served, pemBlock(t, secret.Data[corev1.TLSCertKey])) {
		t.Fatal("ready, but the webhook server does not serve the certificate in the Secret")
	}
	// The API server has the CA once it admits through the webhook.
	poll(t, "the API server calling the webhooks", func(ctx context.Context) bool {
		cs := minimalCloneSet("probe")
		cs.SetNamespace("default")
		err := k8s.Create(ctx, cs, client.DryRunAll)
		return err == nil
	})
	return certs.Secret, certDir, mgr.GetCache()
}

// servedCertificate is the DER leaf certificate a TLS server on loopback
// port presents.
func servedCertificate(t *testing.T, port int) []byte {
	t.Helper()
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // we only read what is served
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}

// pemBlock is the DER bytes of the first PEM block of data.
func pemBlock(t *testing.T, data []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("no PEM block")
	}
	return block.Bytes
}

// TestStaleCertificateCopyIsNotServed: a certificate folder left by an
// earlier run (here: a certificate of another CA) must not make the webhooks
// ready with a certificate the API server does not trust.
func TestStaleCertificateCopyIsNotServed(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stale"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{corev1.TLSCertKey: {Type: "CERTIFICATE", Bytes: der}, corev1.TLSPrivateKeyKey: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	startWebhooks(t, webhookcerts.Options{}, dir) // checks what is served once ready
}

func minimalCloneSet(name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	_ = json.Unmarshal([]byte(fmt.Sprintf(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":%q},
		"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"main","image":"nginx:1.27"}]}}}}`, name)), &obj.Object)
	return obj
}

func TestCloneSetWebhooks(t *testing.T) {
	withWebhooks(t)
	t.Run("defaults", testCloneSetDefaults)
	t.Run("validation", testCloneSetValidation)
	t.Run("every error at once", testCloneSetErrorsAllAtOnce)
	t.Run("update rules", testCloneSetUpdateRules)
	t.Run("v1beta1", testCloneSetV1beta1)
	t.Run("certificate in secret and caBundle", func(t *testing.T) {
		// withWebhooks already proved the API server trusts the
		// served certificate; it came from the CA the rotator patched in.
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("admissionregistration.k8s.io/v1")
		list.SetKind("ValidatingWebhookConfigurationList")
		if err := k8s.List(context.Background(), list); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, item := range list.Items {
			if strings.HasPrefix(item.GetName(), "it-validating-") {
				webhooks, _, _ := unstructured.NestedSlice(item.Object, "webhooks")
				ca, _, _ := unstructured.NestedString(webhooks[0].(map[string]any), "clientConfig", "caBundle")
				found = ca != ""
			}
		}
		if !found {
			t.Error("no caBundle in the validating webhook configuration")
		}
	})
}

// createMinimalCloneSet creates minimalCloneSet(name) in ns through the
// webhooks and returns it as stored.
func createMinimalCloneSet(t *testing.T, ns, name string) *appsv1alpha1.CloneSet {
	t.Helper()
	obj := minimalCloneSet(name)
	obj.SetNamespace(ns)
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	cs := &appsv1alpha1.CloneSet{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func testCloneSetDefaults(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cs := createMinimalCloneSet(t, ns, "web")
	obj := minimalCloneSet("web")
	obj.SetNamespace(ns)
	us := cs.Spec.UpdateStrategy
	if *cs.Spec.Replicas != 1 || *cs.Spec.RevisionHistoryLimit != 10 || us.Type != appsv1alpha1.RecreateCloneSetUpdateStrategyType ||
		us.Partition.String() != "0" || us.MaxUnavailable.String() != "20%" || us.MaxSurge.String() != "0" || us.InPlaceUpdateStrategy != nil {
		t.Errorf("spec defaults: replicas %v history %v strategy %+v", *cs.Spec.Replicas, *cs.Spec.RevisionHistoryLimit, us)
	}
	c := cs.Spec.Template.Spec.Containers[0]
	pod := cs.Spec.Template.Spec
	if c.ImagePullPolicy != corev1.PullAlways || c.TerminationMessagePath != "/dev/termination-log" || pod.RestartPolicy != corev1.RestartPolicyAlways ||
		pod.DNSPolicy != corev1.DNSClusterFirst || pod.SchedulerName != "default-scheduler" || pod.TerminationGracePeriodSeconds == nil {
		t.Errorf("template defaults: container %+v pod %+v", c, pod)
	}
	// Re-applying the manifest as first written leaves the stored
	// template, and so the revision, alone.
	generation := cs.Generation
	again := minimalCloneSet("web")
	again.SetNamespace(ns)
	again.SetResourceVersion(cs.ResourceVersion)
	if err := k8s.Update(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), cs); err != nil {
		t.Fatal(err)
	}
	if cs.Generation != generation {
		t.Errorf("re-applying an undefaulted template changed the spec (generation %d → %d)", generation, cs.Generation)
	}

	inPlace := minimalCloneSet("inplace")
	inPlace.SetNamespace(ns)
	_ = unstructured.SetNestedField(inPlace.Object, "InPlaceIfPossible", "spec", "updateStrategy", "type")
	if err := k8s.Create(ctx, inPlace); err != nil {
		t.Fatal(err)
	}
	// The default is stored (v1beta1); read as v1alpha1 an empty strategy
	// is nil, as OpenKruise's conversion gives it.
	stored := &unstructured.Unstructured{}
	stored.SetAPIVersion("apps.kruise.io/v1beta1")
	stored.SetKind("CloneSet")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(inPlace), stored); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(stored.Object, "spec", "updateStrategy", "rollingUpdate", "inPlaceUpdateStrategy"); !found {
		t.Errorf("InPlaceIfPossible without inPlaceUpdateStrategy: want {}, stored %v", stored.Object["spec"].(map[string]any)["updateStrategy"])
	}
}

func testCloneSetValidation(t *testing.T) {
	ns := newNamespace(t)
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-elses"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if err := k8s.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, patch, field, message string
	}{
		// The API server checks the scale subresource's replicas path
		// before any webhook runs, for OpenKruise as for us.
		{"negative replicas", `{"spec":{"replicas":-1}}`, ".spec.replicas", "should be a non-negative integer"},
		{"empty selector", `{"spec":{"selector":{"matchLabels":null}}}`, "spec.selector", "empty selector is invalid for cloneset"},
		{"bad selector operator", `{"spec":{"selector":{"matchExpressions":[{"key":"app","operator":"Near"}]}}}`, "spec.selector.matchExpressions[0].operator", "not a valid selector operator"},
		{"selector not matching labels", `{"spec":{"selector":{"matchLabels":{"app":"other"}}}}`, "spec.template.metadata.labels", "`selector` does not match template `labels`"},
		{"container without image", `{"spec":{"template":{"spec":{"containers":[{"name":"main"}]}}}}`, "spec.template.spec.containers[0].image", "Required value"},
		{"volume named like a claim template", `{"spec":{"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}],"template":{"spec":{"volumes":[{"name":"data","emptyDir":{}}]}}}}`,
			"spec.template.spec.volumes[1].name", "Duplicate value"},
		{"restartPolicy Never", `{"spec":{"template":{"spec":{"restartPolicy":"Never"}}}}`, "spec.template.spec.restartPolicy", `Unsupported value: "Never": supported values: "Always"`},
		{"activeDeadlineSeconds", `{"spec":{"template":{"spec":{"activeDeadlineSeconds":10}}}}`, "spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in cloneset is not Supported"},
		{"duplicate podsToDelete", `{"spec":{"scaleStrategy":{"podsToDelete":["a","a"]}}}`, "spec.scaleStrategy.podsToDelete", "duplicated items [a]"},
		{"podsToDelete of a missing pod", `{"spec":{"scaleStrategy":{"podsToDelete":["ghost"]}}}`, "spec.scaleStrategy.podsToDelete", `find pod ghost failed: Pod "ghost" not found`},
		{"podsToDelete of another owner's pod", `{"spec":{"scaleStrategy":{"podsToDelete":["someone-elses"]}}}`, "spec.scaleStrategy.podsToDelete", "find pod someone-elses owner is not this CloneSet"},
		{"OnDelete", `{"spec":{"updateStrategy":{"type":"OnDelete"}}}`, "spec.updateStrategy.type", "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'"},
		{"partition not a percent", `{"spec":{"updateStrategy":{"partition":"half"}}}`, "spec.updateStrategy.partition", "failed GetScaledValueFromIntOrPercent for partition: invalid type: string is not a percentage"},
		{"negative partition", `{"spec":{"updateStrategy":{"partition":-1}}}`, "spec.updateStrategy.partition", "must be greater than or equal to 0"},
		{"both priorities", `{"spec":{"updateStrategy":{"priorityStrategy":{"orderPriority":[{"orderedKey":"k"}],"weightPriority":[{"weight":1,"matchSelector":{"matchLabels":{"a":"b"}}}]}}}}`,
			"spec.updateStrategy.priorityStrategy", "only one of weightPriority and orderPriority can be used"},
		{"weight above 100", `{"spec":{"updateStrategy":{"priorityStrategy":{"weightPriority":[{"weight":101,"matchSelector":{"matchLabels":{"a":"b"}}}]}}}}`,
			"spec.updateStrategy.priorityStrategy", "weight must be valid number in the range 1-100"},
		{"weight with empty selector", `{"spec":{"updateStrategy":{"priorityStrategy":{"weightPriority":[{"weight":5,"matchSelector":{}}]}}}}`,
			"spec.updateStrategy.priorityStrategy", "selector can not be empty"},
		{"empty order key", `{"spec":{"updateStrategy":{"priorityStrategy":{"orderPriority":[{"orderedKey":""}]}}}}`,
			"spec.updateStrategy.priorityStrategy", "order key can not be empty"},
		{"empty scatter key", `{"spec":{"updateStrategy":{"scatterStrategy":[{"key":"","value":"a"}]}}}`, "spec.updateStrategy.scatterStrategy", "key should not be empty"},
		{"duplicate scatter term", `{"spec":{"updateStrategy":{"scatterStrategy":[{"key":"zone","value":"a"},{"key":"zone","value":"a"}]}}}`,
			"spec.updateStrategy.scatterStrategy", "duplicated key=zone value=a"},
		{"maxUnavailable not a percent", `{"spec":{"updateStrategy":{"maxUnavailable":"some"}}}`, "spec.updateStrategy.maxUnavailable", "failed GetScaledValueFromIntOrPercent for maxUnavailable"},
		{"maxSurge not a percent", `{"spec":{"updateStrategy":{"maxSurge":"some"}}}`, "spec.updateStrategy.maxSurge", "failed GetScaledValueFromIntOrPercent for maxSurge"},
		{"maxSurge with InPlaceOnly", `{"spec":{"updateStrategy":{"type":"InPlaceOnly","maxSurge":1}}}`, "spec.updateStrategy.maxSurge", "can not use maxSurge with strategy type InPlaceOnly"},
		{"no budget at all", `{"spec":{"replicas":3,"updateStrategy":{"maxUnavailable":0,"maxSurge":0}}}`, "spec.updateStrategy.maxUnavailable", "maxUnavailable and maxSurge should not both be less than 1"},
		{"negative progressDeadlineSeconds", `{"spec":{"progressDeadlineSeconds":-1}}`, "spec.progressDeadlineSeconds", "must be greater than or equal to 0"},
		{"deadline within minReadySeconds", `{"spec":{"minReadySeconds":30,"progressDeadlineSeconds":30}}`, "spec.progressDeadlineSeconds", "must be greater than minReadySeconds"},
		// A hook handler no pod could carry would hold pods forever.
		{"invalid labelsHandler key", `{"spec":{"lifecycle":{"preDelete":{"labelsHandler":{"bad key!":"true"}}}}}`,
			"spec.lifecycle.preDelete.labelsHandler", "name part must consist of alphanumeric characters"},
		{"invalid labelsHandler value", `{"spec":{"lifecycle":{"preNormal":{"labelsHandler":{"example.com/online":"not ok"}}}}}`,
			"spec.lifecycle.preNormal.labelsHandler", "a valid label must be an empty string or consist of alphanumeric characters"},
		{"finalizer without a domain", `{"spec":{"lifecycle":{"inPlaceUpdate":{"finalizersHandler":["drain"]}}}}`,
			"spec.lifecycle.inPlaceUpdate.finalizersHandler[0]", "name is neither a standard finalizer name nor is it fully qualified"},
		{"finalizer not a qualified name", `{"spec":{"lifecycle":{"preDelete":{"finalizersHandler":["example.com/ok","example.com/no way"]}}}}`,
			"spec.lifecycle.preDelete.finalizersHandler[1]", "name part must consist of alphanumeric characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := minimalCloneSet("bad")
			obj.SetNamespace(ns)
			merged, err := mergePatch(obj, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			requireInvalid(t, k8s.Create(context.Background(), merged), tc.field, tc.message)
		})
	}
}

// testCloneSetErrorsAllAtOnce: a CloneSet wrong in several places is
// refused with a cause for each, so a user fixes them in one go.
func testCloneSetErrorsAllAtOnce(t *testing.T) {
	ns := newNamespace(t)
	obj := minimalCloneSet("bad")
	obj.SetNamespace(ns)
	merged, err := mergePatch(obj, `{"spec":{"template":{"spec":{"restartPolicy":"Never"}},"updateStrategy":{"partition":"half"},`+
		`"lifecycle":{"preDelete":{"labelsHandler":{"bad key!":"true"},"finalizersHandler":["drain"]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	err = k8s.Create(context.Background(), merged)
	for _, want := range []struct{ field, message string }{
		{"spec.template.spec.restartPolicy", "Unsupported value"},
		{"spec.updateStrategy.partition", "failed GetScaledValueFromIntOrPercent"},
		{"spec.lifecycle.preDelete.labelsHandler", "name part must consist"},
		{"spec.lifecycle.preDelete.finalizersHandler[0]", "neither a standard finalizer name"},
	} {
		requireInvalid(t, err, want.field, want.message)
	}
}

func testCloneSetUpdateRules(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	obj := minimalCloneSet("web")
	obj.SetNamespace(ns)
	_ = unstructured.SetNestedField(obj.Object, "InPlaceOnly", "spec", "updateStrategy", "type")
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	stored := &appsv1alpha1.CloneSet{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, patch, field, message string
	}{
		{"selector is immutable", `{"spec":{"selector":{"matchLabels":{"app":"web","tier":"x"}},"template":{"metadata":{"labels":{"tier":"x"}}}}}`,
			"spec", "updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden"},
		{"InPlaceOnly refuses an env change", `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"nginx:1.28","env":[{"name":"A","value":"1"}]}]}}}}`,
			"spec", "only allowed to update images in spec for InPlaceOnly, but found add /containers/0/env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Patch(ctx, stored.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(tc.patch)))
			requireInvalid(t, err, tc.field, tc.message)
			after := &appsv1alpha1.CloneSet{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), after); err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != stored.ResourceVersion {
				t.Errorf("a rejected update changed the stored object")
			}
		})
	}
	// An image change alone is what InPlaceOnly allows.
	if err := k8s.Patch(ctx, stored.DeepCopy(), client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}}}`))); err != nil {
		t.Errorf("InPlaceOnly image change rejected: %v", err)
	}
}

// mergePatch applies a JSON merge patch to an object.
func mergePatch(obj *unstructured.Unstructured, patch string) (*unstructured.Unstructured, error) {
	var p map[string]any
	if err := json.Unmarshal([]byte(patch), &p); err != nil {
		return nil, err
	}
	merged := obj.DeepCopy()
	merge(merged.Object, p)
	return merged, nil
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if sub, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				merge(d, sub)
				continue
			}
		}
		if v == nil {
			delete(dst, k)
			continue
		}
		dst[k] = v
	}
}

// TestWebhookCertificateIsRotatedBeforeExpiry: a serving certificate close
// to expiry is replaced, the new one reaches the webhook server, and the API
// server keeps calling the webhooks without a gap in trust.
func TestWebhookCertificateIsRotatedBeforeExpiry(t *testing.T) {
	secretKey, certDir, _ := startWebhooks(t, webhookcerts.Options{
		ServerCertDuration: time.Minute, Lookahead: 50 * time.Second, CheckEvery: time.Second,
	}, "")
	ctx := context.Background()
	secret := &corev1.Secret{}
	if err := k8s.Get(ctx, secretKey, secret); err != nil {
		t.Fatal(err)
	}
	first := string(secret.Data[corev1.TLSCertKey])
	poll(t, "the certificate rotated in the Secret and copied to the webhook server", func(ctx context.Context) bool {
		if err := k8s.Get(ctx, secretKey, secret); err != nil {
			return false
		}
		served, err := os.ReadFile(filepath.Join(certDir, corev1.TLSCertKey))
		return err == nil && string(secret.Data[corev1.TLSCertKey]) != first && string(served) == string(secret.Data[corev1.TLSCertKey])
	})
	poll(t, "the API server calling the webhooks on the new certificate", func(ctx context.Context) bool {
		cs := minimalCloneSet("after-rotation")
		cs.SetNamespace("default")
		return k8s.Create(ctx, cs, client.DryRunAll) == nil
	})
}
